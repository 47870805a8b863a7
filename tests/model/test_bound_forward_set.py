"""A module's bound `forward` set as another module's forward outside the model classes (`model.head.forward =
other.forward` in a patching function or a plain class): whoever calls it skips the hooks of its module (ZG302), as
in a module's own methods. A module of another file that owns parameters only through its children loses nothing
when its own hooks are skipped: its class is read there (`_owns_params`), and a subclass of a torch layer owns the
layer's weight. A forward kept in a local to be put back is no hand-off."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

NETS = """
import torch
from torch import nn


class Scaled(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(d, d))

    def forward(self, x):
        return x @ self.scale


class Stack(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.a = nn.Linear(d, d)
        self.b = nn.Linear(d, d)

    def forward(self, x):
        return self.b(self.a(x))


class Wide(nn.Linear):
    pass
"""

PATCH = """
from torch import nn
from .nets import Scaled, Stack, Wide


def patch(model: nn.Module, other: Scaled):
    model.head.forward = other.forward


class Patcher:
    def __init__(self, model: nn.Module):
        self.model = model

    def apply(self, other: Wide):
        self.model.forward = other.forward


def plain(model: nn.Module, other: Stack):
    model.head.forward = other.forward
    return other.forward(model)


def with_hooks_only(model: Scaled, engine):
    kept = model.forward
    model.forward = lambda x: x
    engine(x=0)
    model.forward = kept
"""


def test_a_bound_forward_set_as_another_modules_forward(tmp_path):
    pkg = tmp_path / "proj"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "nets.py").write_text(textwrap.dedent(NETS))
    path = pkg / "patch.py"
    path.write_text(textwrap.dedent(PATCH))
    found = [(f.code, f.line) for f in check_source(str(path), path.read_text()) if f.code.startswith("ZG3")]
    assert found == [("ZG302", 7), ("ZG302", 15)]
