"""An attribute `__init__` sets to a list of a child's parameters (`self.params = list(self.enc.proj.parameters())`),
walked in the forward: those are the child's parameters, partitioned outside its forward (`params.kept_parameter_lists`).
Their flags, their count and a list of plain tensors stay clean."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

HEAD = """
import torch
from torch import nn


class Enc(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        return self.proj(x)
"""


def _zg3(body: str) -> list[tuple[str, int]]:
    start = len(textwrap.dedent(HEAD).splitlines())
    src = textwrap.dedent(HEAD) + textwrap.dedent(body)
    return sorted((f.code, f.line - start) for f in check_source("m.py", src, None) if f.code.startswith("ZG3"))


def test_a_kept_list_of_a_childs_parameters_walked_in_forward() -> None:
    assert _zg3("""
class Penalised(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.enc = Enc(d)
        self.params = list(self.enc.proj.parameters())

    def forward(self, x):
        penalty = sum(p.pow(2).sum() for p in self.params)
        return self.enc(x), penalty
""") == [("ZG301", 9)]


def test_flags_counts_and_plain_tensors_stay_clean() -> None:
    assert _zg3("""
class Frozen(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.enc = Enc(d)
        self.params = list(self.enc.proj.parameters())
        self.bases = list(torch.zeros(3, d))

    def forward(self, x):
        trainable = any(p.requires_grad for p in self.params)
        return self.enc(x) * len(self.params) + sum(b.sum() for b in self.bases), trainable
""") == []
