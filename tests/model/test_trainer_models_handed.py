"""A trainer (no module) that builds its model in a setup method other than its constructor (`self.GAN = GAN(d)` in
`init_GAN`: `holds.held_attributes`) and runs it, or hands it to a method of its own whose parameter, whatever its name,
then runs it (`self.generate_(self.GAN.G, z)` with `def generate_(self, G, z): return in_chunks(G, z)`:
`script.handed_models`), runs that model: a rank gate around the call is ZG201. Each beside a look-alike."""

from __future__ import annotations

from package_check import found_in_package

NETS = """
from torch import nn


class Gen(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.net = nn.Linear(d, d)
        self.ema = nn.Linear(d, d)

    def forward(self, x):
        return self.net(x)
"""

SET_UP = """
import torch
from .nets import Gen


class Trainer:
    def __init__(self, rank=0, d=512):
        self.is_main = rank == 0
        self.d = d
        self.G = None

    def init_model(self):
        self.G = Gen(self.d)

    def train(self, x):
        self.G(x).mean().backward()
        if self.is_main:
            self.evaluate(x)

    @torch.no_grad()
    def evaluate(self, x):
        return self.G(x)
"""

SET_UP_LOGGER = """
from .nets import Gen


class Logger:
    def write(self, x):
        print(x)


class Trainer:
    def __init__(self, rank=0, d=512):
        self.is_main = rank == 0
        self.G = Gen(d)
        self.log = None

    def init_logging(self):
        self.log = Logger()

    def train(self, x):
        loss = self.G(x).mean()
        loss.backward()
        if self.is_main:
            self.report(loss)

    def report(self, loss):
        self.log.write(loss)
"""

HANDED = """
import torch
from .nets import Gen


def in_chunks(bs, net, *args):
    return torch.cat([net(a) for a in args])


class Trainer:
    def __init__(self, rank=0, d=512):
        self.is_main = rank == 0
        self.GAN = Gen(d)

    def train(self, x):
        self.GAN(x).mean().backward()
        if self.is_main:
            self.evaluate(x)

    @torch.no_grad()
    def evaluate(self, x):
        return self.generate_(self.GAN.ema, x)

    def generate_(self, G, x):
        return in_chunks(4, G, x)
"""

HANDED_DESCRIBED = """
from .nets import Gen


def describe(bs, net, *args):
    return f"{type(net).__name__} {bs}"


class Trainer:
    def __init__(self, rank=0, d=512):
        self.is_main = rank == 0
        self.G = Gen(d)

    def train(self, x):
        self.G(x).mean().backward()
        if self.is_main:
            self.report(x)

    def report(self, x):
        return self.describe_(self.G, x)

    def describe_(self, G, x):
        G.eval()
        return describe(4, G, x)
"""


def test_model_built_in_a_setup_method_runs_under_a_rank_gate(tmp_path):
    assert ("ZG201", 17) in found_in_package(tmp_path, {"nets.py": NETS, "train.py": SET_UP}, "train.py", prefix="ZG2")


def test_object_set_up_elsewhere_that_runs_no_model_is_no_gate(tmp_path):
    assert found_in_package(tmp_path, {"nets.py": NETS, "train.py": SET_UP_LOGGER}, "train.py", prefix="ZG2") == []


def test_model_handed_to_an_own_method_runs_through_its_parameter(tmp_path):
    assert ("ZG201", 17) in found_in_package(tmp_path, {"nets.py": NETS, "train.py": HANDED}, "train.py", prefix="ZG2")


def test_model_handed_to_an_own_method_that_only_describes_it(tmp_path):
    assert found_in_package(tmp_path, {"nets.py": NETS, "train.py": HANDED_DESCRIBED}, "train.py", prefix="ZG2") == []
