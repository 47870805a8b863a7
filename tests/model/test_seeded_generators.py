"""A generator object seeded with a constant draws the same numbers on every rank (h-rl): an epsilon-greedy agent
testing `self.rng.random() < eps` for `self.rng = random.Random(0)` or `np.random.default_rng(1234)` skips its
network on every rank together. Unseeded (`np.random.default_rng()`, `random.Random()`), or seeded with what the
caller hands in (a seed each rank may offset by its rank), the draw stays this host's (ZG202)."""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

AGENT = """
import random

import numpy as np
import torch
from torch import nn


class QNet(nn.Module):
    def __init__(self, d, h=1024):
        super().__init__()
        self.l1 = nn.Linear(d, h)
        self.out = nn.Linear(h, 4)

    def forward(self, x):
        return self.out(torch.relu(self.l1(x)))


class Agent:
    def __init__(self, d, eps=0.1, seed=0):
        self.q = QNet(d)
        self.eps = eps
        self.rng = {rng}

    def act(self, env, obs):
        if self.rng.random() < self.eps:
            return env.action_space.sample()
        return self.q(obs).argmax(-1)
"""


def _draws(rng: str) -> list[tuple[str, int]]:
    source = textwrap.dedent(AGENT).replace("{rng}", rng)
    return [(f.code, f.line) for f in check_source("agent.py", source) if f.code.startswith("ZG2")]


@pytest.mark.parametrize("rng", ["random.Random(0)", "np.random.default_rng(1234)", "np.random.RandomState(seed=7)"])
def test_a_generator_seeded_with_a_constant_draws_alike_on_every_rank(rng: str) -> None:
    assert _draws(rng) == []


@pytest.mark.parametrize("rng", ["random.Random()", "np.random.default_rng()", "random.Random(seed)"])
def test_an_unseeded_or_handed_seed_generator_draws_per_host(rng: str) -> None:
    assert _draws(rng) == [("ZG202", 26)]
