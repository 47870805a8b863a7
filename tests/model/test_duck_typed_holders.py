"""A plain object handed in untyped is an instance of the one plain class of the package answering its methods.

An agent or policy (no `nn.Module`) keeps what it is handed (`def __init__(self, q, eps): self.q = q`) and calls
methods on it (`self.q.no_grad(s)`, `self.q.reinforce(loss)`) that one plain class of its file or of the other
files of the package defines, all of them (`Approximation` of `approx.py`, which the agent's file never imports,
whose `no_grad` and `__call__` run the model it wraps). That object runs a model: an epsilon-greedy draw that
skips `self.q.no_grad(s)` or `self.q(s)` runs it on some ranks only (ZG202). Methods every kind of object has
(`step`, `reset`, `update`) tell no class, and two classes answering tell nothing either.
"""

from __future__ import annotations

from package_check import found_in_package

APPROX = """
import torch


class Approximation:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer

    def __call__(self, *inputs):
        return self.model(*inputs)

    def no_grad(self, *inputs):
        with torch.no_grad():
            return self.model(*inputs)

    def reinforce(self, loss):
        loss.backward()
        self.optimizer.step()
"""

# A second class answering the same methods: which one the agent holds is not told.
APPROX_TWICE = APPROX + """

class Logged(object):
    def __init__(self, inner):
        self.inner = inner

    def __call__(self, *inputs):
        return self.inner(*inputs)

    def no_grad(self, *inputs):
        return self.inner(*inputs)

    def reinforce(self, loss):
        print(loss)
"""

AGENT = """
import numpy as np


class Agent:
    def __init__(self, q, eps):
        self.q = q
        self.eps = eps

    def act(self, state):
        if np.random.rand() < self.eps:
            return np.random.randint(0, 4)
        return self.q.no_grad(state).argmax()

    def act_called(self, state):
        if np.random.rand() < self.eps:
            return np.random.randint(0, 4)
        return self.q(state).argmax()

    def train(self, loss):
        self.q.reinforce(loss)
"""

# Safe: only `step` is called on what the explorer holds, a method of every environment.
EXPLORER = """
import numpy as np


class Explorer:
    def __init__(self, env, eps):
        self.env = env
        self.eps = eps

    def act(self, state):
        if np.random.rand() < self.eps:
            return np.random.randint(0, 4)
        return self.env.step(state)

    def act_called(self, state):
        if np.random.rand() < self.eps:
            return np.random.randint(0, 4)
        return self.env(state)
"""


# A subclass in a third file overriding one of the methods: the object is an `Approximation` of one kind or another.
QNET = """
import torch
from .approx import Approximation


class QNetwork(Approximation):
    def no_grad(self, *inputs):
        with torch.no_grad():
            return self.model(*inputs).detach()
"""


def _found(tmp_path, approx: str, agent: str, qnet: str = "") -> list[tuple[str, int]]:
    """The ZG2 findings of `pkg/agent.py` beside `pkg/approx.py` (and `pkg/qnet.py`), which it does not import."""
    files = {"approx.py": approx, **({"qnet.py": qnet} if qnet else {}), "agent.py": agent}
    return found_in_package(tmp_path, files, "agent.py", prefix="ZG2")


def test_untyped_holder_answered_by_one_package_class(tmp_path):
    assert _found(tmp_path, APPROX, AGENT) == [("ZG202", 11), ("ZG202", 16)]


def test_holder_answered_by_a_class_and_its_subclass(tmp_path):
    assert _found(tmp_path, APPROX, AGENT, QNET) == [("ZG202", 11), ("ZG202", 16)]


def test_methods_of_every_object_tell_no_class_safe(tmp_path):
    assert _found(tmp_path, APPROX, EXPLORER) == []


def test_two_classes_answering_tell_nothing_safe(tmp_path):
    assert _found(tmp_path, APPROX_TWICE, AGENT) == []


# Safe: an object the trainer builds itself (here on rank 0 only, through an import in the method) is not told by
# the methods called on it; only what the class is handed and keeps is.
SCORER = """
import torch
from torch import nn


class Scorer:
    def __init__(self, sampler):
        self.sampler = sampler
        self.net = nn.Linear(4, 4)

    def score(self):
        return self.net(self.sampler.sample(8)).mean()
"""

TRAINER = """
import torch.distributed as dist


class Trainer:
    def __init__(self, model, ema, use_scorer):
        self.model = model
        self.use_scorer = use_scorer and dist.get_rank() == 0
        if self.use_scorer:
            from pkg.approx import Scorer
            self.scorer = Scorer(ema)

    def train(self, x):
        self.model(x).mean().backward()
        if dist.get_rank() == 0:
            print(self.scorer.score())
"""


def test_an_object_the_class_builds_itself_is_not_told_by_its_methods_safe(tmp_path):
    assert _found(tmp_path, SCORER, TRAINER) == []
