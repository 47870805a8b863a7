"""A deep copy of a child the module built or keeps, in a method other than its constructor (`own.child_copies`,
ZG105): a snapshot method, a builder a training method calls, a child of a class of another file; next to copies of
a config, of a child without parameters, and the same copy inside a gather."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found_in_package

PARTS = """
from torch import nn


class Encoder(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        return self.fc(x)
"""

HAZARDS = """
import copy

from torch import nn

from .parts import Encoder


class Ensemble(nn.Module):
    def __init__(self, model: nn.Module, d, n):
        super().__init__()
        self.base_estimator_ = model
        self.enc = Encoder(d)
        self.n = n
        self.estimators_ = nn.ModuleList()

    def _make_estimator(self):
        return copy.deepcopy(self.base_estimator_)

    def fit(self, loader):
        for _ in range(self.n):
            self.estimators_.append(self._make_estimator())

    def snapshot(self):
        return copy.deepcopy(self.enc.cpu())
"""

LOOK_ALIKES = """
import copy

import deepspeed
from torch import nn


class Net(nn.Module):
    def __init__(self, cfg, d):
        super().__init__()
        self.cfg = cfg
        self.loss = nn.MSELoss()
        self.enc = nn.Linear(d, d)

    def settings(self):
        return copy.deepcopy(self.cfg)

    def loss_copy(self):
        return copy.deepcopy(self.loss)

    def snapshot(self):
        with deepspeed.zero.GatheredParameters(self.enc.parameters()):
            return copy.deepcopy(self.enc)

    def forward(self, x):
        return self.enc(x)
"""


def test_copies_of_children_outside_the_constructor_are_found(tmp_path: Path) -> None:
    files = {"parts.py": PARTS, "ens.py": HAZARDS}
    assert found_in_package(tmp_path, files, "ens.py", prefix="ZG105") == [("ZG105", 18), ("ZG105", 25)]


def test_copies_of_settings_parameterless_children_and_gathered_children_stay_clean(tmp_path: Path) -> None:
    assert found_in_package(tmp_path, {"net.py": LOOK_ALIKES}, "net.py", prefix="ZG1") == []
