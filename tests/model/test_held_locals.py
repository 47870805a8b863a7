"""ZG303 on a held or given model reached through a local (h-zg3far, the held-out sets' "child_method" misses on a
plain-attribute receiver, a value a call returned and an item of a container): a step of the training loop, a
method of a plain class holding the model or a free function given it, calls a child's method other than forward
on `enc = model.enc`, on what a method of the model returns (`enc = model.get_encoder()`, also inline), or on a
loop's variable over a container of the model (`for blk in self.model.blocks`, `.values()`, `.items()`), the
model's class in another file of the package and the child inherited from its base class there. Beside each, its
look-alike: the same receivers calling a method that only runs the child's own submodules through `__call__`."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

NETS = """
import torch
import torch.nn.functional as F
from torch import nn


class Encoder(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        return self.proj(x)

    def tied(self, x):
        return F.linear(x, self.proj.weight)

    def run(self, x):
        return self.proj(x)


class Base(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.enc = Encoder(d)
        self.blocks = nn.ModuleList([Encoder(d) for _ in range(2)])
        self.heads = nn.ModuleDict({"a": Encoder(d)})

    def get_encoder(self):
        return self.enc


class Model(Base):
    def __init__(self, d):
        super().__init__(d)
        self.out = nn.Linear(d, d)

    def forward(self, x):
        return self.out(self.enc(x))
"""

STEPS = """
import torch
from .nets import Model


def train_step(model: Model, x):
    model(x).sum().backward()
    enc = model.enc
    y = enc.tied(x)
    enc = model.get_encoder()
    y = enc.tied(y)
    y = model.get_encoder().tied(y)
    for blk in model.blocks:
        y = blk.tied(y)
    for name, head in model.heads.items():
        y = head.tied(y)
    return y


def eval_step(model: Model, x):
    model(x).sum().backward()
    enc = model.enc
    y = enc.run(x)
    enc = model.get_encoder()
    y = enc.run(y)
    y = model.get_encoder().run(y)
    for blk in model.blocks:
        y = blk.run(y)
    for head in model.heads.values():
        y = head.run(y)
    return y


class Trainer:
    def __init__(self, d):
        self.model = Model(d)

    def train_step(self, x):
        self.model(x).sum().backward()
        for blk in self.model.blocks:
            x = blk.tied(x)
        for head in self.model.heads.values():
            x = head.run(x)
        return x
"""


def _package(tmp_path):
    pkg = tmp_path / "heldloc"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name, text in (("nets", NETS), ("steps", STEPS)):
        (pkg / f"{name}.py").write_text(textwrap.dedent(text))
    return pkg


def _found(path) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source(str(path), path.read_text()) if f.code.startswith("ZG3")]


def test_a_childs_method_on_a_local_a_returned_value_or_a_containers_item_of_a_held_or_given_model(tmp_path):
    # `train_step`: `enc.tied` on `model.enc` (9) and on `model.get_encoder()` (11), inline (12), on the items of
    # `model.blocks` (14) and of `model.heads.items()` (16) run `F.linear` with the child's `proj.weight`, no hook of
    # the child running; `Trainer.train_step`: on the items of `self.model.blocks` (41). `eval_step` and the trainer's
    # `head.run` call the child's `proj` through its `__call__` (its hooks gather it)
    found = _found(_package(tmp_path) / "steps.py")
    assert found == [("ZG303", 9), ("ZG303", 11), ("ZG303", 12), ("ZG303", 14), ("ZG303", 16), ("ZG303", 41)]


def test_the_same_receivers_running_the_childs_submodules_through_call_stay_clean(tmp_path):
    # `eval_step` (lines 20-31) and the trainer's `head.run` (43): `Encoder.run` calls `self.proj(x)`, whose hooks
    # gather its weight, through every receiver form of the hazard
    found = _found(_package(tmp_path) / "steps.py")
    assert not [line for _code, line in found if 20 <= line <= 31 or line == 43]
