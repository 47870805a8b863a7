"""`typing.cast(Tensor, p)` hands back `p` itself: a parameter read through a cast is used as the cast is used. Its
`.dtype` names no values (clean); computing with it reads the values (ZG301 in a parent's forward)."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
from typing import cast

import torch
from torch import Tensor, nn


class Head(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, 4 * d)

    def forward(self, x):
        x = x.to(cast(Tensor, self.proj.weight).dtype)
        return x @ cast(Tensor, self.proj.weight).t()
"""


def test_a_cast_parameter_is_used_as_the_cast_is():
    found = [(f.code, f.line) for f in check_source("head.py", textwrap.dedent(SOURCE)) if f.code.startswith("ZG3")]
    assert found == [("ZG301", 15)]
