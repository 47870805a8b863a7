"""A layer class of the program that derives from a torch layer and builds as torch does (no parameters of its own,
torch's leading constructor arguments: `class Linear(nn.Linear)` with `__init__(self, in_features, out_features,
bias=True, init="default")`), also built through `partial(Linear, bias=False)`, is sized from its construction like
the torch layer: a `c_z x n_heads` weight at the constructor's defaults (128 x 16) stays gathered, so reading it in
the parent's forward is clean; a 4096 x 4096 one is ZG301. A subclass with a constructor of its own shape cannot be
sized that way and stays flagged."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
from functools import partial

import torch
from torch import nn


class Linear(nn.Linear):
    def __init__(self, in_features, out_features, bias=True, init="default"):
        super().__init__(in_features, out_features, bias=bias)
        if init == "zeros":
            nn.init.zeros_(self.weight)


class Wide(nn.Linear):
    def __init__(self, dim, expansion=4):
        super().__init__(dim, dim * expansion)


LinearNoBias = partial(Linear, bias=False)


class PairBias(nn.Module):
    def __init__(self, n_heads: int = 16, c_z: int = 128, d: int = 4096):
        super().__init__()
        self.small = LinearNoBias(in_features=c_z, out_features=n_heads)
        self.large = LinearNoBias(in_features=d, out_features=d)
        self.wide = Wide(n_heads)

    def forward(self, z):
        a = z @ self.small.weight.t()
        b = z @ self.large.weight
        c = z @ self.wide.weight
        return a, b, c

    def projected(self, z):
        return self.small(z), self.large(z), self.wide(z)  # (run here: their hooks have gathered them once)
"""


def test_subclasses_of_torch_layers_are_sized_from_their_construction():
    found = [(f.code, f.line) for f in check_source("pair.py", textwrap.dedent(SOURCE)) if f.code.startswith("ZG3")]
    assert found == [("ZG301", 32), ("ZG301", 33)]
