"""Attributes that hold modules however they are built: builders, factories, wrappers, partial, setattr."""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

HEAD = """
import functools
import torch
import torch.distributed as dist
from functools import partial
from torch import nn


def Linear(d_in, d_out, bias=True):
    m = nn.Linear(d_in, d_out, bias)
    nn.init.xavier_uniform_(m.weight)
    return m


def quant_noise(module, p, block_size):
    return module


def make_table(n):
    return {"n": n}


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.inner = nn.Linear(d, d)


class Table:
    @classmethod
    def from_config(cls, d):
        return cls()
"""

BUILT = {
    "builder-method": ("self.fc = self.build_fc(d)", "    def build_fc(self, d):\n        return nn.Linear(d, d)\n"),
    "factory-function": ("self.fc = Linear(d, d)", ""),
    "wrapper-returning-argument": ("self.fc = quant_noise(nn.Linear(d, d), 0.1, 8)", ""),
    "unknown-wrapper": ("self.fc = some_wrapper(nn.Linear(d, d))", ""),
    "partial": ("linear = partial(nn.Linear, bias=False)\n        self.fc = linear(d, d)", ""),
    "partial-called": ("self.fc = functools.partial(nn.Linear, bias=False)(d, d)", ""),
    "tuple-unpacking": ("self.fc, self.other = nn.Linear(d, d), nn.Linear(d, d)", ""),
    "comprehension-unpacking": ("self.fc, self.other = [nn.Linear(d, d) for _ in range(2)]", ""),
    "setattr-constant": ('setattr(self, "fc", nn.Linear(d, d))', ""),
    "class-default-argument": ("self.fc = layer(d, d)", ""),
    "layer-argument": ("self.fc = norm_layer(d)", ""),
    "alternative-constructor": ("self.fc = Block._from_config(d)", ""),
}

TEMPLATE = """
class Net(nn.Module):
    def __init__(self, d, layer=nn.Linear, norm_layer=None):
        super().__init__()
        {build}

    def forward(self, x):
        if dist.get_rank() == 0:
            x = self.fc(x)
        return x

{extra}
"""


def _check(build: str, extra: str):
    code = HEAD + textwrap.dedent(TEMPLATE).format(build=build, extra=extra)
    return [f.code for f in check_source("m.py", code)]


@pytest.mark.parametrize("case", sorted(BUILT))
def test_member_built_indirectly_is_a_module(case):
    build, extra = BUILT[case]
    assert "ZG201" in _check(build, extra), case


SAFE = {
    "factory-returning-a-dict": ("self.fc = make_table(d)", ""),
    "builder-returning-a-number": ("self.fc = self.build_fc(d)", "    def build_fc(self, d):\n        return d * 2\n"),
    "wrapper-of-a-value": ("self.fc = some_wrapper(d)", ""),
    "partial-of-a-function": ("act = partial(torch.relu)\n        self.fc = act", ""),
    "paramless-default": ("self.fc = act(d)", ""),
    "alternative-constructor-of-a-value": ("self.fc = Table.from_config(d)", ""),
}


@pytest.mark.parametrize("case", sorted(SAFE))
def test_value_look_alikes_stay_clean(case):
    build, extra = SAFE[case]
    code = HEAD + textwrap.dedent(TEMPLATE).format(build=build, extra=extra).replace(
        "layer=nn.Linear", "layer=nn.Linear, act=nn.ReLU"
    )
    # (the head's `Linear` is a layer factory initialising what it builds: its own finding, not the case's)
    head = HEAD.count("\n")
    assert [f for f in check_source("m.py", code) if f.line > head] == [], case
