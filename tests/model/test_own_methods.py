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


# a module holding a list of parameters, zeroed through a loop name by its own method
LISTED = """
class Listed(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weights = nn.ParameterList([nn.Parameter(torch.randn(d, d)) for _ in range(2)])

    def init_zero_(self):
        for weight in self.weights:
            weight.data.zero_()

    def describe(self):
        for weight in self.weights:
            print(type(weight).__name__)

    def forward(self, x):
        for weight in self.weights:
            x = x @ weight
        return x
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
    # a child's own method zeroes each parameter of its parameter list through the loop name; the parent calls it
    # in __init__ after the child was built (and partitioned)
    "child-zeroes-its-parameter-list-in-init": ("ZG103", LISTED + """
class FeedForward(nn.Module):
    def __init__(self, d, zero_out=True):
        super().__init__()
        self.project_out = Listed(d)
        if zero_out:
            self.project_out.init_zero_()

    def forward(self, x):
        return self.project_out(x)
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
    # the same list zeroed inside GatheredParameters, and a method that names each item's type only
    "child-parameter-list-zeroed-gathered": LISTED + """
import deepspeed


class FeedForward(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.project_out = Listed(d)
        with deepspeed.zero.GatheredParameters(list(self.project_out.parameters()), modifier_rank=0):
            self.project_out.init_zero_()
        self.project_out.describe()

    def forward(self, x):
        return self.project_out(x)
""",
    # zeroed in the child's own __init__ before anything partitions it
    "parameter-list-zeroed-in-own-init": """
class Listed(nn.Module):
    def __init__(self, d):
        super().__init__()
        weights = [nn.Parameter(torch.randn(d, d)) for _ in range(2)]
        for weight in weights:
            weight.data.zero_()
        self.weights = nn.ParameterList(weights)

    def forward(self, x):
        for weight in self.weights:
            x = x @ weight
        return x
""",
}


@pytest.mark.parametrize("case", sorted(SAFE))
def test_look_alike_is_clean(case):
    assert codes(SAFE[case]) == [], case
