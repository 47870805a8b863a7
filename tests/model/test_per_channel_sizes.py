"""Parameters with one element (or a few) per channel stay gathered under ZeRO-3 (below the persistence
threshold), whatever the unknown channel count: reading them in forward without their module's hooks is free.

* `nn.Embedding(1, d)`: one learned token (a mask embedding), like `nn.Linear(1, d)`.
* `nn.Parameter(torch.Tensor(channels, 1, 3))`: three numbers per channel (the legacy `torch.Tensor(...)`
  constructor sizes a tensor as `torch.empty` does).
* `nn.Sequential(...).forward(x)`: the container owns no parameter of its own; its forward calls each layer,
  whose hooks run.

A table of many rows per channel (`nn.Embedding(num_classes, d)`) and a `torch.Tensor(channels, 64)` are still
read ungathered.
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
        self.mask_emb = nn.Embedding(1, dim)
        self.offsets = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, 1))

    def forward(self, x, mask):
        y = self.bottleneck(x)
        x = torch.where(mask, self.mask_emb.weight, x)
        shift = self.offsets.forward(x)
        return y - self.bottleneck.medians() + shift
"""


def _zg3(source: str) -> list[tuple[str, int]]:
    found = check_source("codec.py", textwrap.dedent(source))
    return sorted((f.code, f.line) for f in found if f.code.startswith("ZG3"))


def test_per_channel_parameters_and_a_sequentials_forward_are_read_gathered():
    assert _zg3(SMALL) == []


def test_tables_of_many_rows_per_channel_are_still_read_ungathered():
    large = SMALL.replace("torch.Tensor(channels, 1, 3)", "torch.Tensor(channels, 64)").replace(
        "nn.Embedding(1, dim)", "nn.Embedding(1000, dim)")
    assert _zg3(large) == [("ZG301", 27), ("ZG303", 29)]
