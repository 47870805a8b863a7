"""A parameter below a child of a class zgen cannot read (`layer.attn.proj.weight`, `attn` an mmcv
`MultiheadAttention`, not installed) is read on as a model zgen cannot see into: written in place by an initialiser
run on the built model, it is a partitioned placeholder (ZG103). Its dtype, and a setting of the child, are clean."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
import math

from mmcv.cnn.bricks.transformer import MultiheadAttention
from torch import nn


class Layer(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.attn = MultiheadAttention(d, 4)
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        return self.attn(self.norm(x))


class Encoder(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        self.layers = nn.ModuleList([Layer(d) for _ in range(n)])

    def fix_init_weight(self):
        for layer_id, layer in enumerate(self.layers):
            layer.attn.proj.weight.data.div_(math.sqrt(2.0 * (layer_id + 1)))

    def describe(self):
        layer = self.layers[0]
        return layer.attn.proj.weight.dtype, layer.attn.batch_first

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
"""


def test_a_grandchild_of_an_unread_class_written_by_a_late_initialiser():
    found = [(f.code, f.line) for f in check_source("enc.py", textwrap.dedent(SOURCE)) if f.code.startswith("ZG1")]
    assert found == [("ZG103", 25)]
