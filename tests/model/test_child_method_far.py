"""ZG303 far away: a child's method other than forward that computes with the child's own parameters two hops down,
in another file of the package (h-zg3x, the held-out sets' "child_method" misses): a method of a base class of
another file the child inherits, reached on an item of a container; a function of another file the method hands
`self` to, which reads a weight by name (also one only the child's file registers), walks a child's parameters or
runs another method of the module that reads them. Beside each, its look-alike: the function
runs the child through its `__call__`, reads a small weight (kept gathered) or a buffer."""

from __future__ import annotations

from package_check import found, write_package

BASE = """
import torch
from torch import nn


class EncBase(nn.Module):
    def encode(self, x):
        return x @ self.proj.weight.T

    def rescale(self, x):
        return x * self.scale
"""

OPS = """
import torch
import torch.nn.functional as F


def project(m, x):
    return F.linear(x, m.proj.weight)


def flat_params(m):
    return torch.cat([p.flatten() for p in m.proj.parameters()])


def normed(m, x):
    return x * m.norm.weight


def run_proj(m, x):
    return m.proj(x)


def shifted(m, x):
    return x + m.scale


def mixed(m, x):
    return x @ m.w


def relay(m, x):
    return m.inner(x)


def relay_run(m, x):
    return m.run(x)
"""

NETS = """
import torch
from torch import nn
from .base import EncBase
from .ops import flat_params, mixed, normed, project, relay, relay_run, run_proj, shifted


class Child(EncBase):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)
        self.norm = nn.LayerNorm(d)
        self.w = nn.Parameter(torch.randn(d, d))
        self.register_buffer("scale", torch.ones(d))

    def forward(self, x):
        return self.norm(self.proj(x)) @ self.w

    def inner(self, x):
        return x @ self.proj.weight.T

    def run(self, x):
        return self.proj(x)

    def mix(self, x):
        return mixed(self, x)

    def relayed(self, x):
        return relay(self, x)

    def relay_ran(self, x):
        return relay_run(self, x)

    def lookup(self, x):
        return project(self, x)

    def flat(self):
        return flat_params(self)

    def normalise(self, x):
        return normed(self, x)

    def ran(self, x):
        return run_proj(self, x)

    def shift(self, x):
        return shifted(self, x)
"""

MODEL = """
import torch
from torch import nn
from .nets import Child


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.blocks = nn.ModuleList([Child(d) for _ in range(2)])
        self.child = Child(d)

    def get_child(self):
        return self.child

    def forward(self, x):
        for blk in self.blocks:
            x = blk.encode(x)
        x = self.get_child().lookup(x)
        x = self.child.normalise(x)
        x = self.child.ran(x)
        x = self.child.shift(x)
        x = self.blocks[0].rescale(x)
        x = self.child.mix(x)
        x = self.child.relayed(x)
        x = self.child.relay_ran(x)
        return self.child(x)
"""

TRAINER = """
import torch
from .nets import Child


class Trainer:
    def __init__(self, d):
        self.model = Child(d)
        self.opt = torch.optim.Adam(self.model.parameters())

    def train_step(self, x):
        loss = self.model(x).pow(2).mean() + self.model.flat().pow(2).sum()
        loss.backward()
        self.opt.step()

    def evaluate(self, x):
        return self.model.ran(x)
"""


def _package(tmp_path):
    files = {"base.py": BASE, "ops.py": OPS, "nets.py": NETS, "model.py": MODEL, "trainer.py": TRAINER}
    return write_package(tmp_path, files, "far")


def _found(path) -> list[tuple[str, int]]:
    return found(path, "ZG3")


def test_a_method_a_child_inherits_from_a_base_class_of_another_file_or_hands_self_to_a_function_there(tmp_path):
    # `blk.encode(x)` for `blk` in `self.blocks`: `EncBase.encode` (base.py) multiplies by the child's `proj.weight`;
    # `self.get_child().lookup(x)` hands the child to `project` (ops.py), which reads `m.proj.weight`. The small
    # norm weight `normed` reads stays gathered in a forward, `run_proj` calls the child's `proj` (its hooks run),
    # `shifted` and `rescale` read a buffer. `mixed` computes with `m.w`, a name only the child's file registers
    # (the caller judges it by the class handed in); `relay` runs `m.inner`, which reads `proj.weight`, while
    # `relay_run` runs `m.run`, which calls `proj`
    found = _found(_package(tmp_path) / "model.py")
    assert found == [("ZG303", 18), ("ZG303", 19), ("ZG303", 24), ("ZG303", 25)]


def test_a_plain_class_runs_a_method_walking_a_childs_parameters_in_another_file(tmp_path):
    # `self.model.flat()` hands the model to `flat_params`, which concatenates `m.proj.parameters()`; `ran` calls
    # the child's `proj` through its `__call__`
    found = _found(_package(tmp_path) / "trainer.py")
    assert found == [("ZG303", 12)]
