"""A constructor's parameter defaulting to a function (`hidden_init=ptu.fanin_init`) runs that function when called
(rlkit's `Mlp` hands each hidden layer's weight, built a line above, to it)."""

from __future__ import annotations

import textwrap


from zgen.model import check_source

MLP = """
import numpy as np
from torch import nn


def fanin_init(tensor):
    bound = 1.0 / np.sqrt(tensor.size(0))
    return tensor.data.uniform_(-bound, bound)


def same_dtype(tensor):
    assert tensor.dtype == torch.float32


class Mlp(nn.Module):
    def __init__(self, hidden_sizes, input_size, hidden_init=fanin_init):
        super().__init__()
        self.fcs = nn.ModuleList()
        in_size = input_size
        for next_size in hidden_sizes:
            fc = nn.Linear(in_size, next_size)
            in_size = next_size
            hidden_init(fc.weight)
            self.fcs.append(fc)

    def forward(self, x):
        for fc in self.fcs:
            x = fc(x)
        return x
"""


def found(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("mlp.py", textwrap.dedent(source))]


def test_a_default_initialiser_called_on_a_built_layer_initialises_a_placeholder():
    assert ("ZG103", 23) in found(MLP)


def test_a_default_that_reads_only_the_dtype_touches_no_value():
    assert ("ZG103", 23) not in found(MLP.replace("hidden_init=fanin_init", "hidden_init=same_dtype"))
