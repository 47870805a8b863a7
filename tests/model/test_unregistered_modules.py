"""A module the constructor builds and keeps only in a plain list, tuple or dict on `self` (`self.nets =
[nn.Linear(d, d)]`, `self.layers.append(...)`) is no submodule: `zero.Init` partitioned it when it was built and the
engine installs no hook on it, so running it in the forward computes with placeholders (ZG302,
`analysis.unregistered`). Items also registered as children, a list rebound to a `ModuleList`, what the constructor
was handed, a list handed whole to a call (`nn.ModuleList(self.blocks_list)`), and modules without parameters
are no such modules."""

from __future__ import annotations

from package_check import found_in_package

HAZARDS = """
from torch import nn


class Encoder(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        return self.proj(x)


class Model(nn.Module):
    def __init__(self, d=2048, depth=2):
        super().__init__()
        self.nets = [nn.Linear(d, d)]
        self._enc = (Encoder(d),)
        self.aux = {"net": nn.Linear(d, d)}
        self.layers = []
        for _ in range(depth):
            self.layers.append(nn.Linear(d, d))

    def forward(self, x):
        x = self.nets[0](x)
        enc, = self._enc
        x = enc(x)
        x = self.aux["net"](x)
        for layer in self.layers:
            x = layer(x)
        return x
"""

LOOK_ALIKES = """
from torch import nn


class Model(nn.Module):
    def __init__(self, teacher, d=2048, depth=2):
        super().__init__()
        self.enc = nn.Linear(d, d)
        self.order = [self.enc]
        self.layers = [nn.Linear(d, d) for _ in range(depth)]
        self.layers = nn.ModuleList(self.layers)
        self._teacher = [teacher]
        self.acts = [nn.GELU(), nn.Dropout(0.1)]
        self._spare = [nn.Linear(d, d)]
        self.blocks_list = [nn.Linear(d, d) for _ in range(depth)]
        self.blocks = nn.ModuleList(self.blocks_list)

    def forward(self, x):
        for m in self.order:
            x = m(x)
        for layer in self.layers:
            x = layer(x)
        for act in self.acts:
            x = act(x)
        for block in self.blocks_list:
            x = block(x)
        t, = self._teacher
        return x - t(x).detach()
"""


def test_modules_kept_in_plain_containers_run_in_forward(tmp_path):
    assert found_in_package(tmp_path, {"model.py": HAZARDS}, "model.py", prefix="ZG3") == [
        ("ZG302", 25), ("ZG302", 27), ("ZG302", 28), ("ZG302", 30),
    ]


def test_registered_handed_paramless_or_unused_items(tmp_path):
    assert found_in_package(tmp_path, {"model.py": LOOK_ALIKES}, "model.py", prefix="ZG3") == []
