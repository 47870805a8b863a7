"""A property of a child's class in another file standing for a parameter (`@property def weight(self): return
self.inner.weight * self.mask` in `layers.py`), read in the parent's forward (`F.linear(x, self.proj.weight)`):
the property's class is read where it is defined (`params._property_parameter`). A property returning a buffer
stays clean."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

LAYERS = """
import torch
from torch import nn


class Masked(nn.Module):
    def __init__(self, inner: nn.Linear):
        super().__init__()
        self.inner = inner
        self.register_buffer("mask", torch.ones(1))

    @property
    def weight(self):
        return self.inner.weight * self.mask

    def forward(self, x):
        return x @ self.weight.t()


class Tabled(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.register_buffer("table", torch.randn(n, d))

    @property
    def weight(self):
        return self.table

    def forward(self, x):
        return x @ self.table.t()
"""

MODEL = """
import torch.nn.functional as F
from torch import nn
from .layers import Masked, Tabled


class Head(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        self.proj = Masked(nn.Linear(d, n))
        self.tab = Tabled(n, d)

    def forward(self, x):
        return F.linear(x, self.proj.weight) + F.linear(x, self.tab.weight)
"""


def test_a_property_of_a_child_class_of_another_file(tmp_path):
    pkg = tmp_path / "proj"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "layers.py").write_text(textwrap.dedent(LAYERS))
    path = pkg / "model.py"
    path.write_text(textwrap.dedent(MODEL))
    found = [(f.code, f.line, f.column) for f in check_source(str(path), path.read_text()) if f.code.startswith("ZG3")]
    assert found == [("ZG301", 14, 28)]
