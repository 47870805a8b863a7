"""A holder's attributes reached by a name written down elsewhere (`for n in self.saved_attributes: getattr(self,
n)`): each attribute the names list, in a method a training loop calls."""

from __future__ import annotations

from package_check import found_in_package

NETS = """
import torch.nn as nn


class QNet(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, 512)
        self.out = nn.Linear(512, 512)

    def forward(self, x):
        return self.out(self.fc(x))
"""

LISTED = """
import torch

from .nets import QNet


class Agent:
    saved_attributes = ("model", "target_model", "optimizer")

    def __init__(self, model: QNet, target: QNet, optimizer):
        self.model = model
        self.target_model = target
        self.optimizer = optimizer
        self.save_attr_names = {"model", "optimizer"}

    def save(self, d):
        for attr in self.saved_attributes:
            value = getattr(self, attr)
            if value is None:
                continue
            torch.save(value.state_dict(), f"{d}/{attr}.pt")

    def dump(self, d):
        for name in self.save_attr_names:
            torch.save(getattr(self, name), f"{d}/{name}.pth")

    def restore(self, d):
        for n in ("model", "target_model"):
            getattr(self, n).load_state_dict(torch.load(f"{d}/{n}.pt"))
"""

NOT_MODELS = """
import torch

from .nets import QNet


class Agent:
    def __init__(self, model: QNet, optimizer, scheduler):
        self.model = model
        self.optimizer = optimizer
        self.scheduler = scheduler
        self.gamma = 0.9
        self.ckpt_names = ("optimizer", "scheduler")

    def save(self, d):
        for n in ("optimizer", "scheduler"):
            torch.save(getattr(self, n).state_dict(), f"{d}/{n}.pt")

    def save_more(self, d):
        for n in self.ckpt_names:
            torch.save(getattr(self, n).state_dict(), f"{d}/{n}.pt")

    def log(self):
        for n in ("gamma",):
            print(n, getattr(self, n))

    def train_mode(self):
        for n in ("model",):
            getattr(self, n).train()
"""

def test_attributes_listed_by_name_are_the_held_models(tmp_path):
    got = found_in_package(tmp_path, {"nets.py": NETS, "agent.py": LISTED}, "agent.py", prefix="ZG1")
    assert ("ZG108", 21) in got  # `value.state_dict()` of each listed attribute
    assert ("ZG108", 25) in got  # `torch.save(getattr(self, name))`: the model pickled whole
    assert ("ZG108", 29) in got  # loaded into each listed model


def test_names_of_other_attributes_stay_clean(tmp_path):
    assert found_in_package(tmp_path, {"nets.py": NETS, "agent.py": NOT_MODELS}, "agent.py", prefix="ZG1") == []

