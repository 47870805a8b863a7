"""Parameters with a few elements per channel stay gathered under ZeRO-3 (below the persistence threshold) once
their module's hooks gathered them, whatever the unknown channel count.

* `nn.Parameter(torch.Tensor(channels, 1, 3))`: three numbers per channel (the legacy `torch.Tensor(...)`
  constructor sizes a tensor as `torch.empty` does), read by the child's own helper after the child ran in the same
  forward.
* `nn.Sequential(...).forward(x)`: the container owns no parameter of its own; its forward calls each layer, whose
  hooks run.

A `torch.Tensor(channels, 64)` is still read ungathered, and so is a child never called through `__call__`, whatever
its size (`nn.Embedding(1, d)`, a learned token read only through its weight): no hook ever gathered it.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SMALL = """
import torch
from torch import nn


class Bottleneck(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.quantiles = nn.Parameter(torch.Tensor(channels, 1, 3))

    def medians(self):
        return self.quantiles[:, :, 1:2]

    def forward(self, x):
        return x - self.medians().squeeze(-1)


class Codec(nn.Module):
    def __init__(self, channels, dim):
        super().__init__()
        self.bottleneck = Bottleneck(channels)
        self.offsets = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, 1))

    def forward(self, x):
        y = self.bottleneck(x)
        shift = self.offsets.forward(x)
        return y - self.bottleneck.medians() + shift
"""


def _zg3(source: str) -> list[tuple[str, int]]:
    found = check_source("codec.py", textwrap.dedent(source))
    return sorted((f.code, f.line) for f in found if f.code.startswith("ZG3"))


def test_per_channel_parameters_and_a_sequentials_forward_are_read_gathered():
    assert _zg3(SMALL) == []


def test_tables_of_many_rows_per_channel_are_still_read_ungathered():
    large = SMALL.replace("torch.Tensor(channels, 1, 3)", "torch.Tensor(channels, 64)")
    assert _zg3(large) == [("ZG303", 27)]


def test_a_learned_token_never_called_is_read_ungathered():
    token = SMALL.replace(
        "        self.offsets = nn.Sequential(",
        "        self.token = nn.Embedding(1, dim)\n        self.offsets = nn.Sequential(",
    ).replace("        shift = self.offsets.forward(x)", "        shift = self.offsets.forward(x) + self.token.weight")
    assert _zg3(token) == [("ZG301", 27)]
