"""ZG303 through a helper of the module's own class (h-zg3base): a non-forward method hands a child to a static,
class or plain method of the class (`self._norm(self.child, x)`) that computes with the child's parameters by name;
a plain class running that method outside any forward computes with them ungathered, as it would through a free
function (`own._handed_uses`). Beside each, its look-alikes: the helper calls the child (its hooks run) or reads a
buffer."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
import torch
from torch import nn


class Child(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)
        self.w = nn.Parameter(torch.randn(d, d))
        self.register_buffer("scale", torch.ones(d))

    def forward(self, x):
        return self.proj(x) @ self.w


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.child = Child(d)

    def forward(self, x):
        return self.child(x)

    def norm_score(self, x):
        return self._norm(self.child, x)

    def mix_score(self, x):
        return self._mix(self.child, x)

    def run_score(self, x):
        return self._run(self.child, x)

    def shift_score(self, x):
        return self._shift(self.child, x)

    @staticmethod
    def _norm(m, x):
        return x * m.proj.weight.sum()

    def _mix(self, m, x):
        return x @ m.w

    @staticmethod
    def _run(m, x):
        return m.proj(x)

    @classmethod
    def _shift(cls, m, x):
        return x * m.scale


class Trainer:
    def __init__(self, d):
        self.model = Model(d)

    def step(self, x):
        a = self.model.norm_score(x)
        b = self.model.mix_score(x)
        c = self.model.run_score(x)
        return a + b + c + self.model.shift_score(x)
"""


def test_a_plain_class_runs_a_method_handing_a_child_to_a_helper_of_the_class_that_computes_with_it(tmp_path):
    path = tmp_path / "own_helper.py"
    # `norm_score` (line 58), `mix_score` (59); and the helpers' own reads of the handed child's weights (39, 42),
    # which run on the built model outside any forward
    path.write_text(textwrap.dedent(SOURCE))
    found = [(f.code, f.line) for f in check_source(str(path), path.read_text()) if f.code == "ZG303"]
    assert found == [("ZG303", 39), ("ZG303", 42), ("ZG303", 58), ("ZG303", 59)]
