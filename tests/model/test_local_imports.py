"""A name a function imports in its own body (`from torch.nn.init import zeros_` under the `if` that uses it)
means there what a module-level import would: zeroing a built child's weight with it in `__init__` is ZG103; with an
own parameter it is fine."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
import torch
from torch import nn


class Bottleneck(nn.Module):
    def __init__(self, planes, last_gamma=False):
        super().__init__()
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.gamma = nn.Parameter(torch.ones(planes))
        if last_gamma:
            from torch.nn.init import zeros_
            zeros_({target})

    def forward(self, x):
        return self.bn3(x) * self.gamma.mean()
"""


def zg1(target: str) -> list[tuple[str, int]]:
    found = check_source("m.py", textwrap.dedent(SOURCE.format(target=target)))
    return [(f.code, f.line) for f in found if f.code.startswith("ZG1")]


def test_an_initialiser_imported_in_the_function_writes_the_built_child():
    assert zg1("self.bn3.weight") == [("ZG103", 13)]


def test_the_same_initialiser_on_an_own_parameter_is_fine():
    assert zg1("self.gamma") == []
