"""Parameters small enough that ZeRO-3 keeps them gathered: sizes bounded from `__init__` (`zgen.model.program.size`)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from zgen.model import check_source
from zgen.model.program.size import DEPTHWISE_WIDTH, param_numel
from zgen.zero_policy import DEFAULT_PERSISTENCE_THRESHOLD

HEAD = """
import torch
import torch.nn.functional as F
from torch import nn
"""


def zg3(source: str) -> list[str]:
    return [f.code for f in check_source("m.py", HEAD + textwrap.dedent(source)) if f.code.startswith("ZG3")]


def numel(layer: str, param: str, call: str, env: dict[str, int] | None = None) -> int | None:
    return param_numel(layer, param, cst.parse_expression(call), env or {})  # type: ignore[arg-type]


# A depthwise convolution's per-channel filters, read outside the conv's forward on a chunked path (the conv runs
# on the other, so its own hook has gathered them: a child the class never runs has its parameters gathered by no
# hook, small or not, `test_never_run_children.py`).
DEPTHWISE = """
class ConvModule(nn.Module):
    def __init__(self, channels, kernel_size={k}):
        super().__init__()
        self.conv = nn.Conv1d(channels, channels, kernel_size, groups={groups})
        self.norm = nn.LayerNorm(channels)

    def forward(self, x, chunked=False):
        if chunked:
            return F.conv1d(self.norm(x), weight=self.conv.weight, bias=self.conv.bias, groups=self.conv.groups)
        return self.conv(self.norm(x))
"""


def test_depthwise_filters_stay_gathered():
    assert zg3(DEPTHWISE.format(k=31, groups="channels")) == []


def test_a_full_convolution_of_unknown_width_is_still_large():
    assert "ZG301" in zg3(DEPTHWISE.format(k=31, groups=1))


def test_a_wide_depthwise_kernel_is_still_large():
    assert numel("Conv1d", "weight", "nn.Conv1d(c, c, 101, groups=c)") == DEPTHWISE_WIDTH * 101
    assert "ZG301" in zg3(DEPTHWISE.format(k=101, groups="channels"))


# timm's ML-Decoder: `-1` means "100 groups", then clamped to the class count.
QUERIES = """
class Decoder(nn.Module):
    def __init__(self, num_classes, num_groups=-1, dim=768):
        super().__init__()
        n = 100 if num_groups < 0 else num_groups
        if {test}:
            n = num_classes
        self.query = nn.Embedding(n, dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(x + self.query.weight.unsqueeze(0))

    def lookup(self, ids):
        return self.query(ids)
"""


@pytest.mark.parametrize("test", ["n > num_classes", "num_classes < n"])
def test_a_clamp_keeps_the_default_bound(test):
    assert zg3(QUERIES.format(test=test)) == []


def test_an_assignment_that_can_raise_the_size_is_unbounded():
    assert "ZG301" in zg3(QUERIES.format(test="n < num_classes"))


def test_a_negative_sentinel_is_no_size():
    assert numel("Linear", "weight", "nn.Linear(d, n)", {"d": 8, "n": -1}) is None
    assert numel("Embedding", "weight", "nn.Embedding(n, 8)", {"n": 12}) == 96 < DEFAULT_PERSISTENCE_THRESHOLD


# A head read outside its forward whose weight has exactly `stage3_param_persistence_threshold` elements:
# DeepSpeed keeps a parameter of at most that many elements gathered (`ds_numel <= param_threshold`), so the
# read fetches nothing; one element more and it is partitioned.
AT_THRESHOLD = """
class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear({n}, 1000, bias=False)
        self.body = nn.Linear(1000, 1000)

    def forward(self, x):
        return self.body(x) @ self.head.weight

    def logits(self, h):
        return self.head(h)
"""


def test_a_parameter_of_exactly_the_threshold_stays_gathered():
    assert numel("Linear", "weight", "nn.Linear(100, 1000, bias=False)") == DEFAULT_PERSISTENCE_THRESHOLD
    assert zg3(AT_THRESHOLD.format(n=100)) == []
    assert zg3(AT_THRESHOLD.format(n=101)) == ["ZG301"]


# A vector with one element per row of an embedding table the class builds (an item bias) is as long as the
# vocabulary: no feature width, and past the threshold. `self.forward` from a method the trainer runs skips the
# hooks that would gather it.
ROW_BIAS = """
class Recommender(nn.Module):
    def __init__(self, n_items, dim):
        super().__init__()
        self.items = nn.Embedding(n_items, dim)
        self.item_bias = nn.Parameter(torch.zeros({length}))

    def forward(self, item):
        return self.items(item).sum(-1) + self.item_bias[item]

    def calculate_loss(self, batch):
        return self.forward(batch["item"]).sum()
"""


def test_a_bias_per_embedding_row_is_large():
    assert zg3(ROW_BIAS.format(length="n_items")) == ["ZG302"]


def test_a_bias_per_feature_is_skipped_too_as_no_hook_of_its_module_ever_fetched_it():
    # small enough to stay gathered once fetched, but `self.forward` from the trainer's method runs no hook of the
    # module: nothing ever fetches it (persistence keeps only what a hook gathered once)
    assert zg3(ROW_BIAS.format(length="dim")) == ["ZG302"]


def test_a_bias_per_row_of_a_table_with_a_padding_row_is_large():
    source = ROW_BIAS.replace("nn.Embedding(n_items, dim)", "nn.Embedding(n_items + 1, dim, padding_idx=0)")
    assert zg3(source.format(length="n_items")) == ["ZG302"]


def test_a_large_bias_the_forward_never_reads_loses_nothing_to_self_forward():
    # `self.forward` skips hooks that would gather only what forward reads: no ZG302; the loss reading the bias
    # outside forward is the method's own bypass (ZG303, and ZG109 for the placeholder it reads)
    source = ROW_BIAS.replace("+ self.item_bias[item]", "").replace(
        'return self.forward(batch["item"]).sum()', 'return (self.forward(batch["item"]) + self.item_bias).sum()'
    )
    assert zg3(source.format(length="n_items")) == ["ZG303"]


def test_a_large_parameter_handed_to_self_forward_is_lost_to_its_hooks():
    assert zg3("""
class Prototypes(nn.Module):
    def __init__(self, n_groups, dim):
        super().__init__()
        self.groups = nn.Parameter(torch.randn(n_groups, dim))

    def forward(self, x, groups):
        return x @ groups.t()

    def assign(self, x):
        return self.forward(x, self.groups).argmax(-1)
""") == ["ZG302"]


# Running statistics and a fixed temperature kept as parameters the optimizer leaves alone, read in a parent's
# forward: `requires_grad=False` changes no size.
FROZEN = """
class Stats(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.stat = nn.Parameter({data}, requires_grad=False)

    def forward(self, x):
        return x - self.stat


class Net(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.stats = Stats(dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(x - self.stats.stat)

    def centred(self, x):
        return self.stats(x)
"""


@pytest.mark.parametrize("data", ["torch.zeros(dim)", "torch.tensor(0.07)", "torch.ones(1, 1, dim)"])
def test_a_frozen_vector_or_scalar_parameter_stays_gathered(data):
    assert zg3(FROZEN.format(data=data)) == []


def test_a_frozen_matrix_parameter_is_still_large():
    assert "ZG301" in zg3(FROZEN.format(data="torch.zeros(dim, dim)"))
