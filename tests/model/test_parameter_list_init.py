"""Parameters of a `ParameterList`/`ParameterDict` child initialised in the `__init__` that built it, after it was
built (`analysis/param_lists.py`, ZG103): the list is a module that `zero.Init` partitions when its own `__init__`
returns. Look-alikes: tensors initialised before they are wrapped, the module's own `nn.Parameter`, a gather, the
module's own parameters walked before any list child exists."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

HEAD = """
import deepspeed
import torch
from torch import nn
from torch.nn import Parameter, ParameterDict, ParameterList
"""


def _found(body: str) -> list[tuple[str, int]]:
    start = len(textwrap.dedent(HEAD).splitlines())
    src = textwrap.dedent(HEAD) + textwrap.dedent(body)
    return sorted((f.code, f.line - start) for f in check_source("m.py", src, None) if f.code.startswith("ZG1"))


def test_parameters_of_a_built_list_initialised_afterwards() -> None:
    body = """
    class Memory(nn.Module):
        def __init__(self, dim, depth):
            super().__init__()
            self.weights = ParameterList([Parameter(torch.randn(dim, dim)) for _ in range(depth)])
            for weight in self.weights:
                nn.init.xavier_uniform_(weight)
            self.table = ParameterDict({"a": Parameter(torch.randn(dim, dim))})
            nn.init.zeros_(self.table["a"])
            self.pairs = nn.ParameterList([ParameterList([Parameter(torch.randn(dim, dim))] * 2)])
            for w1, w2 in self.pairs:
                w1.data.normal_()
            self.gate = Parameter(torch.randn(dim))
            for p in self.parameters():
                nn.init.normal_(p)

        def forward(self, x):
            return x
    """
    assert _found(body) == [("ZG103", 7), ("ZG103", 9), ("ZG103", 12), ("ZG103", 15)]


def test_tensors_initialised_before_wrapping_own_parameters_and_gathers_are_clean() -> None:
    body = """
    class Memory(nn.Module):
        def __init__(self, dim, depth):
            super().__init__()
            self.gate = Parameter(torch.randn(dim))
            for p in self.parameters():
                nn.init.normal_(p)
            weights = [Parameter(torch.randn(dim, dim)) for _ in range(depth)]
            for weight in weights:
                nn.init.xavier_uniform_(weight)
            self.weights = ParameterList(weights)
            nn.init.zeros_(self.gate)
            with deepspeed.zero.GatheredParameters(list(self.weights.parameters()), modifier_rank=0):
                for weight in self.weights:
                    nn.init.xavier_uniform_(weight)

        def forward(self, x):
            return x
    """
    assert _found(body) == []
