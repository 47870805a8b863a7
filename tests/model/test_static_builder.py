"""A static or class method called through its class (`Net._get_model(d)`, `Builder.build(cfg)`) runs that method,
so the local it binds is what the method returns: a model it built is a built model, and loading a state into it
copies into placeholders (ZG108), in this file or another."""

from __future__ import annotations

from tests.model.package_check import found_in_package

NET = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin = nn.Linear(d, d)

    def forward(self, x):
        return self.lin(x)

    @staticmethod
    def _get_model(d):
        model = Net(d)
        return model

    @staticmethod
    def _get_opt(model):
        return torch.optim.SGD(model.parameters(), lr=0.1)

    @staticmethod
    def pretrained(path):
        model = Net._get_model(4)
        model.load_state_dict(torch.load(path))
        return model

    @staticmethod
    def resumed(path):
        model = Net(4)
        opt = Net._get_opt(model)
        opt.load_state_dict(torch.load(path))
        return model, opt


class Builder:
    @staticmethod
    def build(d):
        return Net(d)

    @staticmethod
    def sched(opt):
        return torch.optim.lr_scheduler.StepLR(opt, 1)
"""

OTHER = """
import torch
from .net import Builder


def load_other(path):
    model = Builder.build(4)
    model.load_state_dict(torch.load(path))
    return model


def sched_other(path, opt):
    s = Builder.sched(opt)
    s.load_state_dict(torch.load(path))
    return s
"""


def test_own_static_factory_then_load_is_found(tmp_path):
    assert found_in_package(tmp_path, {"net.py": NET}, "net.py", prefix="ZG108") == [("ZG108", 26)]


def test_static_builder_of_another_file_then_load_is_found(tmp_path):
    assert found_in_package(tmp_path, {"net.py": NET, "other.py": OTHER}, "other.py", prefix="ZG108") == [("ZG108", 8)]


def test_optimizer_and_scheduler_of_static_methods_stay_clean(tmp_path):
    # (`resumed` loads into an optimizer a static method built, `sched_other` into a scheduler)
    found = found_in_package(tmp_path, {"net.py": NET, "other.py": OTHER}, "other.py", prefix="ZG108")
    assert ("ZG108", 14) not in found
    assert ("ZG108", 33) not in found_in_package(tmp_path, {"net.py": NET}, "net.py", prefix="ZG108")
