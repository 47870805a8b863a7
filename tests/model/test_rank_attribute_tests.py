"""`self._rank == 0` in a trainer: a private attribute named plainly `rank`, compared with the main rank, is the
process rank (as `rank == 0` and `args.rank == 0` are); a LoRA-style `self._rank > 0` test is not a main-rank test."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
from torch import nn


class Trainer:
    def __init__(self, model: nn.Module, rank: int):
        self.model = model
        self._rank = rank

    def evaluate(self, x):
        if self._rank == 0:
            return self.model(x)

    def adapt(self, x):
        if self._rank > 0:
            return self.model(x)
"""


def test_a_private_rank_attribute_compared_with_zero_gates_the_model_on_the_main_rank():
    found = [(f.code, f.line) for f in check_source("m.py", textwrap.dedent(SOURCE)) if f.code.startswith("ZG2")]
    assert found == [("ZG201", 11)]
