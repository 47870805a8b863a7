"""Parameter accesses the rules see through: views, helpers, parameter lists, entry methods, modules() loops."""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

HEAD = """
import deepspeed
import torch
from torch import nn
"""

HAZARDS = {
    "view-write-in-init": ("ZG103", """
class Attn(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)
        self.qkv.bias[d : 2 * d].data.zero_()
"""),
    "nested-helper-writes-its-argument": ("ZG103", """
class Vit(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(d, d) for _ in range(2)])
        self.fix()

    def fix(self):
        def rescale(param, i):
            param.div_(i)

        for i, block in enumerate(self.blocks):
            rescale(block.weight.data, i + 1)
"""),
    "module-function-writes-its-argument": ("ZG103", """
def zero_(t):
    t.data.zero_()


class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.head = nn.Linear(d, d)
        zero_(self.head.bias)
"""),
    "modules-loop-in-init": ("ZG103", """
class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, d, 3), nn.BatchNorm2d(d))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight)
"""),
    "parameter-or-linear-member": ("ZG103", """
class Text(nn.Module):
    def __init__(self, d, raw):
        super().__init__()
        if raw:
            self.proj = nn.Parameter(torch.empty(d, d))
        else:
            self.proj = nn.Linear(d, d)
        self.init_parameters()

    def init_parameters(self):
        if isinstance(self.proj, nn.Linear):
            nn.init.normal_(self.proj.weight, std=0.02)
"""),
    "entry-method-writes-child": ("ZG101", """
class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.conv = nn.Conv2d(d, d, 3)
        self.fused = nn.Conv2d(d, d, 3)

    def forward(self, x):
        return self.conv(x)

    def reparameterize(self):
        self.fused.weight.data = self.conv.weight.data.clone()
"""),
    "entry-method-size-of-parameter-list": ("ZG102", """
class Mixin(nn.Module):
    def num_parameters(self, only_trainable=False):
        params = [p for n, p in self.named_parameters() if "emb" not in n]
        return sum(p.numel() for p in params)
"""),
}


@pytest.mark.parametrize("case", sorted(HAZARDS))
def test_hazard_is_found(case):
    code, body = HAZARDS[case]
    found = [f.code for f in check_source("m.py", HEAD + textwrap.dedent(body))]
    assert code in found, (case, found)


SAFE = {
    "helper-that-only-reads": """
class Vit(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(d, d) for _ in range(2)])
        self.fix()

    def fix(self):
        def show(param):
            return param.dtype

        for block in self.blocks:
            show(block.weight)
""",
    "entry-method-under-gathered-parameters": """
class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.conv = nn.Conv2d(d, d, 3)

    def forward(self, x):
        return self.conv(x)

    def clamp(self):
        with deepspeed.zero.GatheredParameters(self.conv.weight, modifier_rank=0):
            self.conv.weight.data.clamp_(-1, 1)
""",
    "slice-read-in-forward-of-own-buffer": """
class Rope(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.register_buffer("freqs", torch.ones(d))
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        return self.proj(x) * self.freqs[: x.shape[-1]]
""",
}


@pytest.mark.parametrize("case", sorted(SAFE))
def test_look_alike_is_clean(case):
    assert check_source("m.py", HEAD + textwrap.dedent(SAFE[case])) == [], case


def test_initialiser_by_name_is_not_an_entry():
    # Not a method the training loop calls (ZG101); run by a parent on the built module, it is ZG103.
    body = """
class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.conv = nn.Conv2d(d, d, 3)

    def forward(self, x):
        return self.conv(x)

    def reset_parameters(self):
        nn.init.zeros_(self.conv.bias)
"""
    assert "ZG101" not in [f.code for f in check_source("m.py", HEAD + textwrap.dedent(body))]


ZERO_FACTS = {
    "to-a-parameter": """
class Cond(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        return self.proj(x.to(self.proj.weight))
""",
    "new-from-a-parameter": """
class Cond(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        pad = self.proj.weight.new_zeros(x.shape)
        return self.proj(x + pad)
""",
    "zero3-detection-idiom": """
class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)
        self.n = 0

    def forward(self, x):
        if self.proj.weight.numel() == 0 and hasattr(self.proj.weight, "ds_numel"):
            self.n = self.proj.weight.ds_numel
        return self.proj(x)
""",
}


@pytest.mark.parametrize("case", sorted(ZERO_FACTS))
def test_dtype_device_uses_and_the_detection_idiom_are_clean(case):
    assert check_source("m.py", HEAD + textwrap.dedent(ZERO_FACTS[case])) == [], case


def test_size_query_next_to_the_idiom_is_still_a_size_query():
    body = ZERO_FACTS["zero3-detection-idiom"].replace(
        "self.n = self.proj.weight.ds_numel", "self.n = self.proj.weight.shape[0]"
    )
    assert "ZG102" in [f.code for f in check_source("m.py", HEAD + textwrap.dedent(body))]


def test_a_cast_of_a_parameter_is_a_read():
    body = """
class Router(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        self.classifier = nn.Linear(d, n)

    def forward(self, x):
        return torch.nn.functional.linear(x, self.classifier.weight.type(torch.float32))
"""
    assert "ZG301" in [f.code for f in check_source("m.py", HEAD + textwrap.dedent(body))]


def test_module_passed_as_an_argument_is_partitioned():
    body = """
class Head(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, h, word_embeddings):
        return torch.matmul(h, word_embeddings.weight.t()) + self.bias


class Adapter(nn.Module):
    def __init__(self, target, rank, config=None):
        super().__init__()
        self.target = target
        self.down = nn.Linear(target.weight.shape[1], rank)
"""
    codes = [f.code for f in check_source("m.py", HEAD + textwrap.dedent(body))]
    assert "ZG301" in codes and "ZG102" in codes


HELPERS = {
    "free-function-initialises-its-module": """
def init_layer(layer):
    nn.init.xavier_uniform_(layer.weight)
    if layer.bias is not None:
        layer.bias.data.fill_(0.0)


class Cnn(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.conv1 = nn.Conv2d(3, d, 3)
        init_layer(self.conv1)
""",
    "free-apply-walks-the-built-model": """
def named_apply(fn, module, name=""):
    for child_name, child in module.named_children():
        named_apply(fn, child, child_name)
    fn(module, name)


class Vit(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(d, d) for _ in range(2)])
        named_apply(self._init, self)

    @staticmethod
    def _init(module, name):
        if isinstance(module, nn.Linear):
            nn.init.zeros_(module.bias)
""",
    "init-callable-from-the-config": """
class Embedding(nn.Module):
    def __init__(self, config, vocab, d):
        super().__init__()
        self.position = nn.Embedding(vocab, d)
        config.init_method(self.position.weight)
""",
}


@pytest.mark.parametrize("case", sorted(HELPERS))
def test_initialisation_through_a_helper_is_found(case):
    assert "ZG103" in [f.code for f in check_source("m.py", HEAD + textwrap.dedent(HELPERS[case]))], case


def test_helper_that_only_reads_the_module_is_clean():
    body = HELPERS["free-function-initialises-its-module"].replace(
        "    nn.init.xavier_uniform_(layer.weight)\n    if layer.bias is not None:\n        layer.bias.data.fill_(0.0)\n",
        "    return layer.weight.dtype\n",
    )
    assert check_source("m.py", HEAD + textwrap.dedent(body)) == []


def test_module_apply_in_init_is_gathered_by_zero_init():
    body = HELPERS["free-apply-walks-the-built-model"].replace("named_apply(self._init, self)", "self.apply(self._init_all)")
    body += "\n    def _init_all(self, module):\n        pass\n"
    assert "ZG103" not in [f.code for f in check_source("m.py", HEAD + textwrap.dedent(body))]


THROUGH = {
    "property": """
class Decoder(nn.Module):
    def __init__(self, vocab, extra, d):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.extra = nn.Embedding(extra, d)

    @property
    def weight(self):
        return torch.cat([self.embed.weight, self.extra.weight])

    def forward(self, h):
        return h @ self.weight.t()
""",
    "stored-lambda": """
class LM(nn.Module):
    def __init__(self, vocab, d):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.to_logits = lambda t: t @ self.emb.weight.t()

    def forward(self, ids):
        return self.to_logits(self.emb(ids))
""",
}


@pytest.mark.parametrize("case", sorted(THROUGH))
def test_read_through_a_property_or_lambda(case):
    assert "ZG301" in [f.code for f in check_source("m.py", HEAD + textwrap.dedent(THROUGH[case]))], case


def test_property_that_returns_only_metadata_is_clean():
    body = THROUGH["property"].replace(
        "return torch.cat([self.embed.weight, self.extra.weight])", "return self.embed.weight.dtype"
    ).replace("return h @ self.weight.t()", "return self.embed(h).to(self.weight)")
    assert "ZG301" not in [f.code for f in check_source("m.py", HEAD + textwrap.dedent(body))]


def test_helper_that_gathers_before_writing_is_clean():
    body = """
def fill_(out):
    with deepspeed.zero.GatheredParameters(out, modifier_rank=0):
        out.data.zero_()


class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.head = nn.Linear(d, d)
        fill_(self.head.weight)
"""
    assert check_source("m.py", HEAD + textwrap.dedent(body)) == []
