"""A layer factory building a layer class of the program that derives from a torch layer.

The WaveNet vocoder's `Conv1d(...)` factory builds `m = conv.Conv1d(...)` (its own `class Conv1d(nn.Conv1d)`),
initialises it and hands back `nn.utils.weight_norm(m)`. Called in a model's constructor under `zero.Init`, the
layer is partitioned when its constructor returns, before the factory re-parametrises it, as with `nn.Conv1d`.
A class of the program that is no torch layer (a block of layers) is not a layer: a function handing one back
may assemble a model.
"""

from __future__ import annotations

from zgen.model import check_source

FACTORY = """
from torch import nn


class Conv1d(nn.Conv1d):
    def incremental_forward(self, x):
        return super().forward(x)


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv1d(c, c, 1)

    def forward(self, x):
        return self.conv(x)


def conv1d(c, k):
    m = Conv1d(c, c, k)
    return nn.utils.weight_norm(m)


def block(c):
    m = Block(c)
    return nn.utils.weight_norm(m)
"""


def test_a_factory_of_a_program_layer_reparametrises_a_partitioned_layer():
    assert [(f.code, f.line) for f in check_source("modules.py", FACTORY)] == [("ZG104", 21)]
