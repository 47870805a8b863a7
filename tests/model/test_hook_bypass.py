"""A module's parameters used where no hook of that module runs: its `forward` called from a method run outside it,
its bound `forward` handed on as a callback, and a method other than forward called on a model that a class (module
or not) holds. Each hazard has a safe look-alike."""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

HEADER = """
import torch
from torch import nn


class Unet(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, 4096)
        self.weight = nn.Parameter(torch.randn(4096, 4096))

    def forward(self, x):
        return self.proj(x) @ self.weight

    def sample(self, x):
        return x @ self.weight

    def describe(self):
        return f"unet with {self.proj.in_features} inputs"


def run_sampler(x, fn):
    return fn(x)


class Holder(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.unet = Unet(d)


class Stack(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(d, d) for _ in range(4)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
"""

HAZARDS = {
    "own forward run twice from a sampling method": ("ZG302", """
        class Denoiser(Unet):
            def denoise(self, x):
                return self.forward(self.forward(x))
        """),
    "bound forward of a child handed to a sampler": ("ZG302", """
        class Guided(Holder):

            def forward(self, x):
                return run_sampler(x, fn=self.unet.forward)
        """),
    "a trainer calls a sampling method of the model it holds": ("ZG303", """
        class Trainer:
            def __init__(self, unet: Unet):
                self.unet = unet

            def sample(self, x):
                return self.unet.sample(x)
        """),
}

SAFE = {
    "own forward from a helper forward runs": """
        class Denoiser(Unet):
            def forward(self, x):
                return self._twice(x)

            def _twice(self, x):
                return super().forward(super().forward(x))
        """,
    "forward of a module owning no parameters itself, from outside": """
        class Deep(Stack):
            def run_twice(self, x):
                return self.forward(self.forward(x))
        """,
    "the module itself handed to a sampler": """
        class Guided(Holder):

            def forward(self, x):
                return run_sampler(x, fn=self.unet)
        """,
    "a trainer calls its model and a method that reads no parameter": """
        class Trainer:
            def __init__(self, unet: Unet):
                self.unet = unet

            def sample(self, x):
                print(self.unet.describe())
                return self.unet(x)
        """,
}


def _codes(body: str) -> list[str]:
    # the header's own `Unet.sample` reads `self.weight` outside forward (ZG303 at that read): not the case's
    start = len(HEADER.splitlines())
    found = check_source("m.py", HEADER + textwrap.dedent(body))
    return [f.code for f in found if f.code.startswith("ZG3") and f.line > start]


@pytest.mark.parametrize("name", sorted(HAZARDS))
def test_hazard(name):
    code, body = HAZARDS[name]
    assert code in _codes(body)


@pytest.mark.parametrize("name", sorted(SAFE))
def test_safe_lookalike(name):
    assert _codes(SAFE[name]) == []
