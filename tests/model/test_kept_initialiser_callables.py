"""A callable made by a call and kept on `self` (`self._init = partial(kaiming_, ...)`), called as a statement with a
child's parameter as its only argument, initialises it (h-init, pytorch_tabular's embedding layer;
`effects._produced_callable`, as for a local `init = partial(...)`): ZG103 after the child was built. Look-alikes:
the same callable given the module's own parameter (not partitioned yet), and a module kept on `self` given one
(calling it runs its forward)."""

from __future__ import annotations

from package_check import found_in_package

UTILS = """\
import torch.nn as nn


def kaiming_(x, initialization="kaiming_uniform", d_sqrt_inv=1.0):
    if initialization == "kaiming_uniform":
        nn.init.uniform_(x, a=-d_sqrt_inv, b=d_sqrt_inv)
    else:
        nn.init.normal_(x, std=d_sqrt_inv)
"""

MODEL = """\
from functools import partial

import torch
import torch.nn as nn
from .utils import kaiming_


class Embed(nn.Module):
    def __init__(self, cards, d):
        super().__init__()
        self._init = partial(kaiming_, initialization="kaiming_normal", d_sqrt_inv=1 / d)
        self.layers = nn.ModuleList([nn.Embedding(c, d) for c in cards])
        for layer in self.layers:
            self._init(layer.weight)  # 14 hazard

    def forward(self, x):
        return torch.cat([l(x[:, i]) for i, l in enumerate(self.layers)], 1)


class Own(nn.Module):
    def __init__(self, cards, d):
        super().__init__()
        self._init = partial(kaiming_, d_sqrt_inv=1 / d)
        self.w = nn.Parameter(torch.empty(len(cards), d))
        self._init(self.w)  # 25 own parameter, not partitioned yet

    def forward(self, x):
        return x @ self.w
"""

FILES = {"utils.py": UTILS, "model.py": MODEL}


def test_kept_partial_initialises_a_built_child(tmp_path):
    assert ("ZG103", 14) in found_in_package(tmp_path, FILES, "model.py", prefix="ZG1")


def test_kept_partial_on_own_parameter_stays_clean(tmp_path):
    got = found_in_package(tmp_path, FILES, "model.py", prefix="ZG1")
    assert not [line for _code, line in got if line == 25]
