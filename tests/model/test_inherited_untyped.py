"""ZG303 on a module of no named class whose method only a base class of another file of the package defines
(h-zg3base): `self.model.encode(x)` on a model handed in untyped, where `base.py` defines `EncBase.encode` over
`self.proj.weight` and only the subclasses in `nets.py` (and their own subclasses, in a third file) build `proj`.
The package's classes inheriting the method are what the model may be. Beside it, its look-alikes: a base method
that calls the child's `proj` (its hooks run) or reads a buffer."""

from __future__ import annotations

from package_check import found, write_package

BASE = """
import torch
from torch import nn


class EncBase(nn.Module):
    def encode(self, x):
        return x @ self.proj.weight.T

    def run(self, x):
        return self.proj(x)

    def rescale(self, x):
        return x * self.scale
"""

NETS = """
import torch
from torch import nn
from . import base


class Child(base.EncBase):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)
        self.register_buffer("scale", torch.ones(d))

    def forward(self, x):
        return self.proj(x)
"""

DEEP = """
from torch import nn
from .nets import Child


class Deeper(Child):
    def __init__(self, d):
        super().__init__(d)
        self.out = nn.Linear(d, d)

    def forward(self, x):
        return self.out(self.proj(x))
"""

SAMPLER = """
class Sampler:
    def __init__(self, model, steps):
        self.model = model
        self.steps = steps

    def sample(self, x):
        for _ in range(self.steps):
            x = self.model.encode(x)
        return x

    def ran(self, x):
        return self.model.rescale(self.model.run(x))
"""


def _package(tmp_path):
    return write_package(tmp_path, {"base.py": BASE, "nets.py": NETS, "deep.py": DEEP, "sampler.py": SAMPLER}, "heirs")


def _found(path) -> list[tuple[str, int]]:
    return found(path, "ZG3")


def test_an_untyped_model_runs_a_method_its_subclasses_inherit_from_a_base_of_another_file(tmp_path):
    # `encode` multiplies by `proj.weight`, which `Child` and `Deeper` build; `run` calls `proj` and `rescale`
    # reads a buffer
    assert _found(_package(tmp_path) / "sampler.py") == [("ZG303", 9)]
