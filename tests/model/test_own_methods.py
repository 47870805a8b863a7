"""A submodule's own methods called on it once it is built (`zgen.model.analysis.own`)."""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

HEAD = """
import torch
from torch import nn


class Noisy(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(d, d))
        self.eps = nn.Parameter(torch.zeros(d, d), requires_grad=False)
        self.register_buffer("seen", torch.zeros(()))

    def resample(self):
        self.eps.copy_(torch.randn_like(self.eps))

    def count(self):
        self.seen += 1

    def forward(self, x):
        return x @ (self.weight + self.eps)
"""


def codes(source: str) -> list[str]:
    """ZG1 codes on the lines of `source` (the noisy layer's own `resample` is an entry method of `HEAD`)."""
    found = check_source("m.py", HEAD + textwrap.dedent(source))
    return [f.code for f in found if f.code.startswith("ZG1") and f.line > HEAD.count("\n")]


HAZARDS = {
    # torch's own initialiser of a child built a line earlier: the child is partitioned when its __init__ returns
    "child-reset-parameters-in-init": ("ZG103", """
class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.gru = nn.GRU(d, d)
        self.gru.reset_parameters()
"""),
    # a method of the built model walks its modules and calls a noisy layer's resampling, which writes in place
    "walk-resamples-noise-parameters": ("ZG101", """
class Q(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.head = Noisy(d)

    def forward(self, x):
        return self.head(x)

    def resample_noise(self, model: nn.Module):
        for m in model.modules():
            if isinstance(m, Noisy):
                m.resample()
"""),
    # a module built inline and handed straight to a function that initialises it
    "inline-module-handed-to-an-initialiser": ("ZG103", """
def zero_init(layer):
    nn.init.zeros_(layer.weight)
    return layer


class Head(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.out = zero_init(nn.Linear(d, 4 * d))
"""),
    # a method of the top model reaches each block's child through the loop variable and resamples it in place
    "loop-variable-child-resampled": ("ZG101", """
class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.noisy = Noisy(d)

    def forward(self, x):
        return self.noisy(x)


class Top(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.blocks = nn.ModuleList([Block(d) for _ in range(4)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x

    def resample_all(self):
        for block in self.blocks:
            block.noisy.resample()
"""),
}


@pytest.mark.parametrize("case", sorted(HAZARDS))
def test_hazard_is_found(case):
    code, source = HAZARDS[case]
    assert code in codes(source), case


SAFE = {
    # the method touches a buffer only; the module rebuilt in the method itself is new and whole
    "buffer-only-method-and-a-fresh-module": """
class Q(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.head = Noisy(d)
        self.d = d

    def forward(self, x):
        return self.head(x)

    def tick(self):
        self.head.count()

    def rebuilt(self):
        fresh = nn.Linear(self.d, self.d)
        fresh.reset_parameters()
        return fresh
""",
    # a module's own initialiser in its own __init__, before any child exists
    "own-reset-before-children": """
class Cell(nn.Linear):
    def __init__(self, d):
        super().__init__(d, d)
        self.reset_parameters()
""",
    # the same walk through a loop variable's child, calling a method that only counts in a buffer
    "loop-variable-child-counts-in-a-buffer": """
class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.noisy = Noisy(d)

    def forward(self, x):
        return self.noisy(x)


class Top(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.blocks = nn.ModuleList([Block(d) for _ in range(4)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x

    def count_all(self):
        for block in self.blocks:
            block.noisy.count()
""",
}


@pytest.mark.parametrize("case", sorted(SAFE))
def test_look_alike_is_clean(case):
    assert codes(SAFE[case]) == [], case
