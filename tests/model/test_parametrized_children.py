"""A child built with a module-based parametrization (`torch.nn.utils.parametrizations.orthogonal(layer)`) computes
its `weight` on each read by calling the registered parametrization module, whose hooks gather what it holds:
reading `self.rotate.weight` in the parent's forward is gathered. The same read of a plain child's weight, or of a
tensor the parametrization does not name, is unhooked (ZG301).
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

ROTATIONS = """
import torch
from torch import nn
from torch.nn.utils import parametrizations


class Rotate(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(d, d))
        self.scale = nn.Parameter(torch.empty(d, d))

    def forward(self, x):
        return x @ self.weight


class Intervention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.rotate = torch.nn.utils.parametrizations.orthogonal(Rotate(d))
        self.plain = nn.Linear(d, d)

    def forward(self, base):
        rotated = self.rotate(base)
        back = rotated @ self.rotate.weight.T
        return back @ self.plain.weight.T + rotated @ self.rotate.scale
"""


def _found(source: str) -> list[tuple[str, int]]:
    found = check_source("model.py", textwrap.dedent(source))
    return sorted((f.code, f.line) for f in found if f.code.startswith("ZG3"))


def test_a_parametrized_weight_is_computed_by_a_hooked_module_and_a_plain_one_is_not():
    assert _found(ROTATIONS) == [("ZG301", 26), ("ZG301", 26)]  # `self.plain.weight`, `self.rotate.scale`
