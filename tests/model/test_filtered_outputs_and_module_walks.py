"""Outputs filtered by their values, walks of a module handed to a writer, and torch's newer gradient clipping.

* A list kept from a model's outputs by a test of their values (`low = [i for i, r in enumerate(out) if r[1] < t]`,
  or appended to under such a test, or a count grown under it) is as long as this rank's outputs make it: a branch
  on its length or emptiness that runs the model again decides per rank (ZG203). A filter on what an item is (`is not
  None`), on its shape, or on the keys of a dict of outputs is the same on every rank.
* `init_weights(self.up.modules())` hands the helper every module of `self.up`'s walk: a helper writing each module
  it iterates writes the child's parameters after the child was built (ZG103); `init_weights(self.modules())` walks
  every child built before it. A helper that only counts the modules it is given writes nothing.
* `torch.nn.utils.clip_grads_with_norm_(params, max_norm, total)` clips like `clip_grad_norm_` (ZG107).
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source


def _found(source: str, prefix: str = "ZG") -> list[tuple[str, int]]:
    found = check_source("model.py", textwrap.dedent(source))
    return sorted((f.code, f.line) for f in found if f.code.startswith(prefix))


FILTERED = """
def comprehension(model, images, ths):
    result = model(images)
    low = [i for i, r in enumerate(result) if r[1] < ths]
    if len(low) > 0:
        return model(images[low])
    return result


def appended(model, images, ths):
    result = model(images)
    low = []
    for r in result:
        if r[1] < ths:
            low.append(r)
    if low:
        return model(images)
    return result


def counted(model, images, ths):
    result = model(images)
    n = 0
    for r in result:
        if r[1] < ths:
            n += 1
    if n > 0:
        return model(images)
    return result
"""

FILTERED_ALIKES = """
def shapes(model, x):
    feats = model(x)
    kept = [f for f in feats if f.shape[1] > 2]
    if len(kept) > 0:
        return model(x)
    return feats


def present(model, x):
    outs = model(x)
    kept = [o for o in outs if o is not None]
    if kept:
        return model(x)
    return outs


def named(model, x):
    outs = model(x)
    losses = [v for k, v in outs.items() if "loss" in k]
    if len(losses) > 1:
        return model(x)
    return outs
"""


def test_a_branch_on_outputs_kept_by_their_values_decides_per_rank():
    assert _found(FILTERED, "ZG2") == [("ZG203", 5), ("ZG203", 16), ("ZG203", 27)]


def test_filters_on_what_outputs_are_decide_the_same_everywhere():
    assert _found(FILTERED_ALIKES, "ZG2") == []


WALKS = """
import torch.nn as nn
from torch.nn import init


def init_weights(modules):
    for m in modules:
        if isinstance(m, nn.Conv2d):
            init.xavier_uniform_(m.weight.data)
            m.bias.data.zero_()


def count_convs(modules):
    return sum(1 for m in modules if isinstance(m, nn.Conv2d))


class Craft(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Sequential(nn.Conv2d(64, 64, 3), nn.ReLU())
        init_weights(self.up.modules())
        self.n = count_convs(self.up.modules())
        self.head = nn.Conv2d(64, 2, 1)

    def forward(self, x):
        return self.head(self.up(x))


class Whole(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Sequential(nn.Conv2d(64, 64, 3), nn.ReLU())
        init_weights(self.modules())

    def forward(self, x):
        return self.up(x)
"""


def test_a_walk_of_a_child_handed_to_a_writer_initialises_the_built_child():
    assert _found(WALKS, "ZG1") == [("ZG103", 21), ("ZG103", 33)]


CLIPS = """
import torch
from torch import nn


class Trainer:
    def __init__(self, model: nn.Module):
        self.model = model

    def clip(self, max_norm):
        parameters = [p for p in self.model.parameters()]
        total = torch.tensor(1.0)
        torch.nn.utils.clip_grads_with_norm_(parameters, max_norm, total)
        return total
"""


def test_clipping_with_a_given_norm_clips_partitioned_gradients():
    assert _found(CLIPS, "ZG107") == [("ZG107", 13)]


TYPED_FACTORY = """
import torch
from torch import nn

_LINEARS = {}
_WIDTHS = {"torch": 2}


def register(kind, factory):
    _LINEARS[kind] = factory


def get_linear(d_in: int, d_out: int, kind: str = "torch") -> nn.Module:
    return _LINEARS[kind](d_in, d_out)


def get_width(d_in: int, kind: str = "torch") -> int:
    return _WIDTHS[kind] * d_in


class Unit(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fused = get_linear(d, 2 * d)
        self.width = get_width(d)

    def forward(self, x):
        return self.fused(x)

    def unfuse(self):
        a, b = torch.split(self.fused.weight, self.width, dim=0)
        return a, b, torch.split(self.width, 2)
"""


def test_a_factory_typed_to_return_a_module_builds_one():
    """`def get_linear(...) -> nn.Module` returning what a registry builds: its result is a module whose weight a
    method run on the built model reads (ZG109); a factory typed to return a number builds none."""
    assert _found(TYPED_FACTORY, "ZG1") == [("ZG109", 31)]
