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


RECYCLED = """
import random

from torch import nn


class Folder(nn.Module):
    def __init__(self, rounds):
        super().__init__()
        self.trunk = nn.Linear(4096, 4096)
        self.rounds = rounds

    def forward(self, x, recycling_steps=0):
        for _ in range(recycling_steps + 1):
            x = self.trunk(x)
        return x

    def training_step(self, batch, batch_idx):
        recycling_steps = random.randint(0, self.rounds)
        out = self(
            batch,
            recycling_steps=recycling_steps,
        )
        return out.mean()

    def validation_step(self, batch, batch_idx):
        return self(batch, recycling_steps=self.rounds).mean()
"""


def test_a_random_count_handed_to_the_modules_own_forward_bounds_its_loop():
    found = [(f.code, f.line, f.end_line) for f in check_source("m.py", textwrap.dedent(RECYCLED))
             if f.code.startswith("ZG2")]
    assert found == [("ZG202", 19, 22)]  # from the draw down to the argument; the configured count is clean


def test_a_count_drawn_from_a_generator_seeded_with_the_step_is_every_ranks():
    source = RECYCLED.replace("import random", "import numpy as np").replace(
        "random.randint(0, self.rounds)", "np.random.default_rng(self.global_step).integers(0, self.rounds + 1)")
    assert [f for f in check_source("m.py", textwrap.dedent(source)) if f.code.startswith("ZG2")] == []
