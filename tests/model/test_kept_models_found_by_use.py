"""Models a plain object keeps, found by how they were made or how a base made them.

* A trainer's setup binding a local to what a model getter hands back (`model = self.exp.get_model()`), moving it,
  wrapping it, then keeping it (`self.model = model`): its checkpoint (`save_model = self.ema if self.use_ema else
  self.model` ... `save_model.state_dict()`) reads placeholders.
* An agent whose base class builds its net in a setup method the agent extends (`super().init_nets(spec)`), of this
  file or another: its copy of that net (`deepcopy(self.net)`) copies placeholders.
"""

from __future__ import annotations

from tests.model.package_check import Q_NETS, found_in_package

TRAINER = """
import torch


class Trainer:
    def __init__(self, exp):
        self.exp = exp

    def before_train(self):
        model = self.exp.get_model()
        model.to("cuda")
        self.model = model

    def train_one_iter(self, x):
        self.model(x).sum().backward()

    def save_ckpt(self, name):
        save_model = self.ema_model if self.use_ema else self.model
        torch.save({"model": save_model.state_dict()}, name)
"""

BASE = """
from .nets import QNet


class ActorCritic:
    def init_nets(self, spec):
        self.net = QNet(spec["d"], spec["n"])

    def act(self, x):
        return self.net(x)
"""

AGENT = """
from copy import deepcopy

from .base import ActorCritic


class PPO(ActorCritic):
    def init_nets(self, spec):
        super().init_nets(spec)
        self.old_net = deepcopy(self.net)
"""


def test_a_model_a_trainer_keeps_from_a_getter(tmp_path):
    assert found_in_package(tmp_path, {"trainer.py": TRAINER}, "trainer.py", prefix="ZG1") == [("ZG108", 19)]


def test_a_net_a_base_builds_in_the_setup_an_agent_extends(tmp_path):
    files = {"nets.py": Q_NETS, "base.py": BASE, "agent.py": AGENT}
    assert found_in_package(tmp_path, files, "agent.py", prefix="ZG1") == [("ZG105", 10)]
