"""Methods a model interface leaves to its subclasses by raising `NotImplementedError` (issue 20, blind27's coqui
miss).

`class TrainerModel(ABC, nn.Module)` declares `def train_step(self, batch, criterion): raise NotImplementedError`
without `@abstractmethod`; every model implementing it runs its layers there. A trainer that calls
`self.model.train_step(batch, criterion)` on the model it holds runs them outside the model's forward (ZG303), as it
would for an `@abstractmethod`. Look-alikes: a logging hook of the same interface answering `None`, an optional
hook whose body is `pass`, a getter it leaves to implement (`get_lr`), and a concrete class refusing a method of
its abstract base (`MLPActor.log_prob` raising `NotImplementedError`): no subclass of it computes there.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

INTERFACE = """
from abc import ABC, abstractmethod

import torch
from torch import nn


class TrainerModel(ABC, nn.Module):
    @abstractmethod
    def forward(self, x):
        ...

    def train_step(self, batch, criterion):
        \"\"\"Run the model forward and compute the losses.\"\"\"
        msg = " [!] `train_step()` is not implemented."
        raise NotImplementedError(msg)

    def train_log(self, batch, outputs, steps) -> None:
        raise NotImplementedError

    def on_epoch_end(self, trainer):
        pass

    def get_lr(self, step):
        raise NotImplementedError


class Actor(nn.Module, ABC):
    @abstractmethod
    def log_prob(self, act):
        ...


class MLPActor(Actor):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(512, 512)

    def forward(self, obs):
        return self.net(obs)

    def log_prob(self, act):
        raise NotImplementedError


class Trainer:
    def __init__(self, model: TrainerModel, criterion, actor: MLPActor):
        self.model = model
        self.criterion = criterion
        self.actor = actor

    def step(self, batch, steps):
        {call}
"""


def _zg3(call: str) -> list[tuple[str, int]]:
    source = textwrap.dedent(INTERFACE).replace("{call}", call)
    return [(f.code, f.line) for f in check_source("trainer.py", source) if f.code.startswith("ZG3")]


def test_a_step_the_interface_leaves_to_its_models_runs_them_outside_forward():
    assert _zg3("return self.model.train_step(batch, self.criterion)") == [("ZG303", 53)]


def test_a_logging_hook_and_an_optional_hook_of_the_interface_run_nothing():
    assert _zg3("self.model.train_log(batch, None, steps); self.model.on_epoch_end(self)") == []
    assert _zg3("return self.model.get_lr(steps)") == []


def test_a_concrete_class_refusing_its_bases_method_runs_nothing_there():
    assert _zg3("return self.actor.log_prob(batch)") == []
