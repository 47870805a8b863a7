"""Children a function of the file builds.

`self.score = tower()` for `def tower(): return nn.Sequential(nn.Linear(1024, 1024), ...)` gives the module
parameters below it, as `self.score = nn.Sequential(...)` would: a parent running it only when an optional input was
given skips its gathers on ranks called without one (ZG205). A factory of parameterless layers (activations, dropout)
gives none.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source


def _found(source: str) -> list[tuple[str, int]]:
    found = check_source("model.py", textwrap.dedent(source))
    return sorted((f.code, f.line) for f in found if f.code.startswith("ZG2"))


SOURCE = """
from torch import nn


def tower():
    return nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024))


def noise():
    return nn.Sequential(nn.Dropout(0.1), nn.ReLU())


class Scored(nn.Module):
    def __init__(self):
        super().__init__()
        self.score = tower()

    def forward(self, x):
        return self.score(x)


class Noisy(nn.Module):
    def __init__(self):
        super().__init__()
        self.noise = noise()

    def forward(self, x):
        return self.noise(x)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(1024, 1024)
        self.scored = Scored()
        self.noisy = Noisy()

    def forward(self, x, context=None, extra=None):
        h = self.body(x)
        if context is not None:
            h = h + self.scored(context)
        if extra is not None:
            h = h + self.noisy(extra)
        return h
"""


def test_a_child_built_by_a_factory_of_layers_gathers_but_one_of_activations_does_not():
    assert _found(SOURCE) == [("ZG205", 40)]
