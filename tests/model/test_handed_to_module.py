"""A parameter of one submodule handed to the call of another (`self.criterion(out, w=self.model.head.weight)`) from
a method run on the built model (a training step): the callee computes with it in its forward, where its hooks
gather only its own parameters (`calls.handed_to_module`): ZG301 there, not ZG109. The model itself built by a
factory a local picks (`backbone = resnet50` ... `backbone(...)`, `members`), so its parameters are known."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

HEAD = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, d, k):
        super().__init__()
        self.body = nn.Linear(d, d)
        self.prototypes = nn.Linear(d, k, bias=False)

    def forward(self, x):
        return self.prototypes(self.body(x))


def small(**kw):
    return Net(**kw)


def large(**kw):
    return Net(**kw)


class Loss(nn.Module):
    def forward(self, out, queue, weights):
        return (out - queue @ weights.t()).pow(2).mean()
"""


def _found(body: str) -> list[tuple[str, int]]:
    start = len(textwrap.dedent(HEAD).splitlines())
    src = textwrap.dedent(HEAD) + textwrap.dedent(body)
    return sorted((f.code, f.line - start) for f in check_source("m.py", src, None) if f.code[:3] in ("ZG1", "ZG3"))


def test_a_weight_handed_to_a_loss_module_from_a_training_step() -> None:
    assert _found("""
class SwAV(nn.Module):
    def __init__(self, arch, d, k):
        super().__init__()
        if arch == "small":
            backbone = small
        else:
            backbone = large
        self.model = backbone(d=d, k=k)
        self.criterion = Loss()

    def forward(self, x):
        return self.model(x)

    def training_step(self, batch, queue):
        out = self.model(batch)
        return self.criterion(out, queue, weights=self.model.prototypes.weight)
""") == [("ZG301", 17)]


def test_sizes_and_module_calls_of_the_step_stay_clean() -> None:
    assert _found("""
class SwAV(nn.Module):
    def __init__(self, d, k):
        super().__init__()
        backbone = small
        self.model = backbone(d=d, k=k)
        self.criterion = Loss()

    def forward(self, x):
        return self.model(x)

    def training_step(self, batch, queue):
        out = self.model(batch)
        return self.criterion(out, queue, self.model.prototypes.weight.dtype)
""") == []
