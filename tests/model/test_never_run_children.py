"""A child whose parameters are handed to a fused kernel and that is never run itself.

`layer_norm_fn(x, self.norm.weight, self.norm.bias)`, `F.batch_norm(h, ..., self.bn.weight, self.bn.bias)`: the norm
is built as a module but the class never calls it, hands it on or runs a method of it, so no hook ever gathers its
parameters. ZeRO-3 keeps a small parameter gathered only once some hook has gathered it, so these reads are unhooked
(ZG301) small as they are. A norm the class also calls in another branch (`else: h = self.norm(x)`) has been
gathered by its own hook, and its small parameters stay gathered.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

FUSED = """
import torch.nn.functional as F
from torch import nn
from somelib.ops import layer_norm_fn


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.bn = nn.BatchNorm1d(d)
        self.mlp = nn.Linear(d, d)

    def forward(self, x, residual=None):
        h = layer_norm_fn(x, self.norm.weight, self.norm.bias, residual=residual, eps=self.norm.eps)
        h = F.batch_norm(h, self.bn.running_mean, self.bn.running_var, self.bn.weight, self.bn.bias)
        return self.mlp(h)


class Either(nn.Module):
    def __init__(self, d, fused):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.fused = fused
        self.mlp = nn.Linear(d, d)

    def forward(self, x):
        if self.fused:
            h = layer_norm_fn(x, self.norm.weight, self.norm.bias)
        else:
            h = self.norm(x)
        return self.mlp(h)
"""


def test_parameters_of_a_child_the_class_never_runs_are_read_unhooked():
    found = sorted({(f.code, f.line) for f in check_source("block.py", textwrap.dedent(FUSED)) if f.code.startswith("ZG3")})
    assert found == [("ZG301", 15), ("ZG301", 16)]
