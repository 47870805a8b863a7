"""Two per-rank values a trainer keeps apart from the model: a draw from its own replay memory, and a patience
count moved only when its own validation metric fails to improve.

`cur, s, r, s2, terms = self.mem_pool.sample(batch_size=n)` draws transitions this rank stored; a target network run
only when the first drawn transition is not terminal (`if not terms[0]: self.old_net(s2)`) runs on some ranks only
(ZG203). The stop flag set once `self._stopping_steps` (moved only under a test of the metric the method was
handed) reaches the patience ends the loop calling the model at a different step on each rank (ZG204). Look-alikes:
a memory's `len()` compared with a setting before any model runs, and a flag set on a step counter every rank
moves alike.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

AGENT = """
import torch
from torch import nn


class QNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(1024, 1024)

    def forward(self, x):
        return self.fc(x)


class Agent(object):
    def __init__(self, pool):
        self.net = QNet()
        self.old_net = QNet()
        self.mem_pool = pool

    def train(self, steps, bs):
        for step in range(steps):
            cur, states, rewards, nexts, terms = self.mem_pool.sample(batch_size=bs)
            target = torch.tensor(rewards)
            if not terms[0]:
                target = target + self.old_net(nexts)
            loss = (self.net(states) - target).pow(2).mean()
            loss.backward()
"""

TRAINER = """
import torch
from torch import nn


class Ranker(nn.Module):
    def __init__(self, patience):
        super().__init__()
        self.fc = nn.Linear(1024, 1)
        self._patience = patience

    def forward(self, x):
        return self.fc(x)

    def fit(self, loader, valid):
        self._best = float("inf")
        self._stopping_steps = 0
        self._stop_training = False
        for x in loader:
            self(x).sum().backward()
            self.checkpoint_and_earlystop(self.evaluate(valid))
            if self._stop_training:
                break

    def checkpoint_and_earlystop(self, logs):
        value = logs["loss"]
        if value > self._best:
            self._stopping_steps += 1
        else:
            self._stopping_steps = 0
            self._best = value
        if self._stopping_steps >= self._patience:
            self._stop_training = True

    @torch.no_grad()
    def evaluate(self, valid):
        return {"loss": sum(self(x).sum().item() for x in valid)}
"""

LOOK_ALIKES = """
import torch
from torch import nn


class QNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(1024, 1024)

    def forward(self, x):
        return self.fc(x)


class Agent(object):
    def __init__(self, pool, max_steps):
        self.net = QNet()
        self.mem_pool = pool
        self.max_steps = max_steps
        self.global_step = 0
        self.stop = False

    def train(self, bs):
        while not self.stop:
            if len(self.mem_pool) < bs:
                break
            self.net(torch.randn(bs, 1024)).sum().backward()
            self.on_step(bs)

    def on_step(self, bs):
        self.global_step += 1
        if self.global_step >= self.max_steps:
            self.stop = True
"""


def _found(source: str) -> list[tuple[str, int]]:
    found = check_source("agent.py", textwrap.dedent(source))
    return sorted((f.code, f.line) for f in found if f.code.startswith("ZG2"))


def test_a_target_network_gated_on_a_drawn_transition_is_found():
    assert ("ZG203", 25) in _found(AGENT)


def test_a_stop_flag_set_by_a_patience_count_of_this_ranks_metric_is_found():
    assert ("ZG204", 22) in _found(TRAINER)


def test_a_memory_size_and_a_step_counter_are_no_such_values():
    assert _found(LOOK_ALIKES) == []
