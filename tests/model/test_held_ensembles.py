"""A plain object (an agent, a trainer) keeping a container of models built in its constructor: a plain list or
tuple of them (`[Critic(d) for _ in range(n)]`, `[deepcopy(self.critics[i]) for i in range(n)]`), a `ModuleList`
or a dict of them. An item taken out (`self.critics[i]`) is one of the models, so calling it runs a model: a key
drawn at random picks which one runs on this rank (ZG202), a rank test decides whether it runs (ZG201)
(`holds.model_containers`, `ScriptScope.held_items`). Lists of other things (buffers, environments, tensors, sizes)
picked at random, a draw broadcast first, and every item run stay clean."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found_in_package

NETS = """
from torch import nn


class Critic(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, 1)

    def forward(self, x):
        return self.fc(x)
"""

ENSEMBLE = """
import random
from copy import deepcopy

import numpy as np
import torch
import torch.distributed as dist
from torch import nn

from .nets import Critic


class Agent:
    def __init__(self, d, n, m):
        self.critics = [Critic(d).to("cuda") for _ in range(n)]
        self.targets = [deepcopy(self.critics[i]) for i in range(n)]
        self.mods = nn.ModuleList([Critic(d) for _ in range(n)])
        self.pair = (Critic(d), Critic(d))
        self.n, self.m = n, m

    def subset(self, s):
        a = torch.randperm(self.n)
        return [self.targets[a[j]](s) for j in range(self.m)]

    def one(self, s):
        return self.mods[random.randrange(self.n)](s)

    def bound(self, s):
        net = self.pair[np.random.randint(2)]
        return net(s)

    def walked(self, s):
        out = 0
        for i in np.random.choice(self.n, self.m, replace=False):
            out = out + self.critics[i](s)
        return out

    def first_rank(self, s):
        if dist.get_rank() == 0:
            return self.critics[0](s)
        return s
"""

OTHER_LISTS = """
import random

import numpy as np
import torch
import torch.distributed as dist

from .nets import Critic


class Buffer:
    def __init__(self, n):
        self.items = [0] * n

    def sample(self, k):
        return random.sample(self.items, k)


class Agent:
    def __init__(self, d, n, make_env):
        self.critics = [Critic(d) for _ in range(n)]
        self.buffers = [Buffer(100) for _ in range(n)]
        self.envs = [make_env() for _ in range(n)]
        self.noise = [torch.randn(d) for _ in range(n)]
        self.optims = [torch.optim.Adam(c.parameters()) for c in self.critics]
        self.n, self.k = n, 0

    def buffer(self, s):
        batch = self.buffers[random.randrange(self.n)].sample(4)
        return [c(s) for c in self.critics], batch

    def env(self, s):
        self.envs[np.random.randint(self.n)].step(0)
        return [self.critics[j](s) for j in range(self.n)]

    def noisy(self, s):
        s = s + self.noise[random.randrange(self.n)]
        self.optims[random.randrange(self.n)].step()
        return [c(s) for c in self.critics]

    def broadcast(self, s):
        idx = torch.randint(self.n, (1,))
        dist.broadcast(idx, 0)
        return self.critics[idx.item()](s)

    def configured(self, s):
        return self.critics[self.k](s)
"""


def test_an_item_of_a_held_container_picked_or_gated_per_rank(tmp_path: Path) -> None:
    found = found_in_package(tmp_path, {"nets.py": NETS, "agent.py": ENSEMBLE}, "agent.py", prefix="ZG2")
    assert found == [("ZG202", 23), ("ZG202", 26), ("ZG202", 29), ("ZG202", 34), ("ZG201", 39)]


def test_other_lists_picked_at_random_and_every_model_run_stay_clean(tmp_path: Path) -> None:
    assert found_in_package(tmp_path, {"nets.py": NETS, "agent.py": OTHER_LISTS}, "agent.py", prefix="ZG2") == []
