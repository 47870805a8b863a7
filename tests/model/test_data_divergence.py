"""Decisions on a tensor's values choose which submodules run: ZG203/ZG204 see them; shapes and flags do not count."""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

TEMPLATE = """
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.a = nn.Linear(d, d)
        self.b = nn.Linear(d, d)

    def forward(self, x, stop=None):
        if {test}:
            return self.a(x)
        return self.b(x)


class Generator(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.step = nn.Linear(d, d)

    def generate(self, x, criteria):
        for _ in range(16):
            x = self.step(x)
            if {stop}:
                break
        return x
"""


@pytest.mark.parametrize("test", ["x.sum() > 0", "x.norm().item() < 1e-3", "x.max() == x.min()"])
def test_branch_on_a_reduction_of_the_input(test):
    codes = [f.code for f in check_source("m.py", TEMPLATE.format(test=test, stop="False"))]
    assert "ZG203" in codes or "ZG204" in codes, codes


# The batch size differs per rank (the last, uneven batch; batches packed by length): a branch on it is data.
@pytest.mark.parametrize("test", ["x.size(0) > 1", "x.shape[0] == 1"])
def test_branch_on_the_batch_size(test):
    codes = [f.code for f in check_source("m.py", TEMPLATE.format(test=test, stop="False"))]
    assert "ZG203" in codes, codes


BATCH = """
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.a = nn.Linear(d, d)
        self.b = nn.Linear(d, d)

    def forward(self, x, items):
        {bind}
        x = self.a(x)
        if {test}:
            x = self.b(x)
        return x.view({size}, -1)
"""


# The batch size held in a local (`b, n = x.shape[:2]`), or the length of an argument that selects samples (`x[idx]`).
@pytest.mark.parametrize(
    "bind, test",
    [("b = x.shape[0]", "b > 1"), ("b, n = x.shape[:2]", "b == 1"), ("b, *_ = x.size()", "b > 1"),
     ("b = x.size(0)", "b != 0"), ("b = x[items]", "len(items) > 0"), ("b = x.shape[-1]", "len(x) == 1")],
)
def test_branch_on_a_batch_size_held_in_a_local(bind, test):
    codes = [f.code for f in check_source("m.py", BATCH.format(bind=bind, test=test, size="b"))]
    assert "ZG203" in codes, codes


# Other dimensions, a batch size only used to reshape, a length of a local list, a size compared to another size, the
# length of an argument that indexes nothing (a list of feature maps).
@pytest.mark.parametrize(
    "bind, test",
    [("b, n = x.shape[:2]", "n > 1"), ("b = x.shape[0]", "self.training"), ("b = len([1, 2])", "b > 1"),
     ("b = x.shape[-1]", "b == 1"), ("b = x.shape[0]", "b == items.shape[0]"), ("b = 2", "len(items) > 1")],
)
def test_dimensions_and_batch_sizes_not_tested_are_not_data(bind, test):
    findings = check_source("m.py", BATCH.format(bind=bind, test=test, size="b"))
    assert not [f for f in findings if f.code.startswith("ZG2")], [(f.code, f.message) for f in findings]


def test_builtin_all_over_a_stopping_verdict_is_a_data_exit():
    codes = [f.code for f in check_source("m.py", TEMPLATE.format(test="False", stop="all(criteria(x))"))]
    assert "ZG204" in codes, codes


@pytest.mark.parametrize(
    "test", ["x.size(-1) > 1", "self.training", "stop is not None and stop > 0", "x.shape[0] == self.k"]
)
def test_shapes_flags_and_arguments_are_not_data(test):
    assert check_source("m.py", textwrap.dedent(TEMPLATE.format(test=test, stop="False"))) == []


def test_the_number_of_dimensions_is_the_kind_of_input_given():
    # `x.dim() == 3` runs `a` for one kind of input, `b` for another (images or videos: make_a_video's labelled
    # hazard; `taint._kind_test`, tests/model/test_input_kind.py)
    findings = check_source("m.py", textwrap.dedent(TEMPLATE.format(test="x.dim() == 3", stop="False")))
    assert [f.code for f in findings] == ["ZG203"]


def test_a_random_layer_list_is_seen_through_enumerate_and_zip():
    from zgen.model.rules.zg202_random_layer_skip import RandomLayerSkip

    src = next(s for s in RandomLayerSkip.INVALID if "SkippingStack" in s)
    for loop in ("for i, layer in enumerate(self.layers):", "for layer, _ in zip(self.layers, range(4)):"):
        variant = src.replace("for layer in self.layers:", loop)
        assert variant != src
        assert [f.code for f in check_source("m.py", variant)] == ["ZG202", "ZG202"], loop  # the list's, the loop's
