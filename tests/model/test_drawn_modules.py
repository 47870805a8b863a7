"""A module drawn at random out of a container (`layer = random.choice(self.layers)`; `np.random.choice(self.heads)`)
runs on the ranks that drew it: each rank draws from its own host stream, so ranks run different modules (ZG202).
Look-alikes: a draw out of a list of names while every layer runs; a literal pick."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
import random

import numpy as np
from torch import nn


class Drop(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(512, 512) for _ in range(4)])
        self.heads = nn.ModuleList([nn.Linear(512, 512) for _ in range(4)])
        self.names = ["a", "b"]

    def forward(self, x):
        layer = random.choice(self.layers)
        x = layer(x)
        return np.random.choice(self.heads)(x)

    def every_layer(self, x):
        name = random.choice(self.names)
        for layer in self.layers:
            x = layer(x)
        return self.heads[0](x), name
"""


def _zg2(source: str) -> list[tuple[int, str]]:
    return [(f.line, f.code) for f in check_source("m.py", textwrap.dedent(source)) if f.code.startswith("ZG2")]


def test_a_module_drawn_at_random_from_a_container_is_a_random_pick():
    assert _zg2(SOURCE) == [(16, "ZG202"), (18, "ZG202")]
