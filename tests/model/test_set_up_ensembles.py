"""An agent's ensemble (a plain list of models) built by calling a class the agent holds as a value
(`[self.ClassCri(d).to(dev) for _ in range(n)]`: `holds._class_value_built`), also in a setup method other than the
constructor (`def init(self)`: `holds.set_up_containers`), holds models: one picked by a random draw is ZG202. Each
beside a look-alike that runs every critic."""

from __future__ import annotations

from package_check import Q_NETS, found_in_package

NETS = Q_NETS

CLASS_VALUE = """
import torch
from copy import deepcopy
from .nets import QNet


class Agent:
    def __init__(self, d, n, N=10, M=2):
        self.ClassCri = QNet
        self.N, self.M = N, M
        self.device = torch.device("cpu")
        self.crits = [self.ClassCri(d, n).to(self.device) for i in range(self.N)]
        self.targets = [deepcopy(self.crits[i]) for i in range(N)]

    def update(self, s):
        with torch.no_grad():
            a = torch.randperm(self.N)
            q = [self.targets[a[j]](s) for j in range(self.M)]
        return torch.cat(q, 1).min(1)
"""

SET_UP = """
import torch
from .nets import QNet


class Agent:
    def __init__(self, d, n, N=10):
        self.ClassCri = QNet
        self.N, self.d, self.n = N, d, n

    def init(self):
        self.crits = [self.ClassCri(self.d, self.n) for _ in range(self.N)]

    def update(self, s):
        i = torch.randint(self.N, (1,)).item()
        return self.crits[i](s)
"""

SET_UP_ALL_RUN = """
import torch
from .nets import QNet


class Agent:
    def __init__(self, d, n, N=10):
        self.N, self.d, self.n = N, d, n

    def init(self):
        self.crits = [QNet(self.d, self.n) for _ in range(self.N)]
        self.names = [f"critic{i}" for i in range(self.N)]

    def update(self, s):
        qs = torch.stack([c(s) for c in self.crits])
        i = torch.randint(self.N, (1,)).item()
        print(self.names[i])
        return qs[i]
"""


def test_ensemble_built_from_a_class_value_picked_by_a_draw(tmp_path):
    assert ("ZG202", 18) in found_in_package(tmp_path, {"nets.py": NETS, "agent.py": CLASS_VALUE}, "agent.py",
                                             prefix="ZG2")


def test_ensemble_built_in_a_setup_method_picked_by_a_draw(tmp_path):
    assert ("ZG202", 16) in found_in_package(tmp_path, {"nets.py": NETS, "agent.py": SET_UP}, "agent.py", prefix="ZG2")


def test_ensemble_built_in_a_setup_method_all_run(tmp_path):
    assert found_in_package(tmp_path, {"nets.py": NETS, "agent.py": SET_UP_ALL_RUN}, "agent.py", prefix="ZG2") == []
