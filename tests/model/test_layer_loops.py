"""A helper that walks the layers of a module it is given by iterating the module itself (`for layer in
reversed(module)`, a `Sequential`) and writes one layer's weight (`analysis/effects.py`): handed a built child
from `__init__`, that write lands on a partitioned placeholder (ZG103); next to the same call inside a gather."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SRC = """
import deepspeed
import torch
from torch import nn


def init_last_layer(module, scale=6e-4):
    for last in reversed(module):
        if isinstance(last, nn.Linear):
            break
    last.weight.data.copy_(torch.rand_like(last.weight.data) * scale)


class Actor(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 4096))
        {CALL}

    def forward(self, x):
        return self.mlp(x)
"""


def _codes(call: str) -> list[tuple[str, int]]:
    src = textwrap.dedent(SRC).replace("{CALL}", call)
    return sorted((f.code, f.line) for f in check_source("m.py", src, None) if f.code.startswith("ZG1"))


def test_a_layer_of_a_built_child_written_through_the_module_iterated() -> None:
    assert ("ZG103", 18) in _codes("init_last_layer(self.mlp)")


def test_the_same_call_gathered_is_clean() -> None:
    gathered = "with deepspeed.zero.GatheredParameters(list(self.mlp.parameters()), modifier_rank=0):\n" \
               "            init_last_layer(self.mlp)"
    assert [c for c in _codes(gathered) if c[1] in (18, 19)] == []
