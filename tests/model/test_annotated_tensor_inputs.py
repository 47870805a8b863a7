"""An argument annotated as one tensor (`x: Tensor`) is a tensor like one read by its extents: `len(x) == 0` is this
rank's batch being empty (an early return skips the layers after it, ZG204), and a loop over it runs once per row
of this rank's data (`for tok in target_tokens: self.model(...)`, ZG204). A list of tensors, or a state of the
calling convention (`hidden_states: torch.Tensor`), is no such input."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

EMPTY = """
from typing import List, Optional
from torch import Tensor, nn


class CenterLoss(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.center = nn.Linear(dim, dim)

    def forward(self, x: {annotation}, y: Optional[Tensor] = None) -> Tensor:
        if len(x) == 0:
            return y.sum() * 0.0
        return self.center(x).sum()
"""

LOOP = """
import torch
from typing import List
from torch import Tensor


class Attribution:
    def __init__(self, model):
        self.model = model

    def by_tokens(self, input_ids: Tensor, {name}: {annotation}) -> Tensor:
        out = []
        for token in {name}:
            logits = self.model.forward(input_ids=input_ids).logits
            out.append(logits[0, -1, token])
        return torch.stack(out)
"""


def zg2(source: str, **fields: str) -> list[tuple[str, int]]:
    found = check_source("m.py", textwrap.dedent(source.format(**fields)))
    return [(f.code, f.line) for f in found if f.code.startswith("ZG2")]


def test_an_empty_tensor_argument_returns_before_the_layers():
    assert zg2(EMPTY, annotation="Tensor") == [("ZG204", 12)]
    assert zg2(EMPTY, annotation="torch.FloatTensor") == [("ZG204", 12)]


def test_an_empty_list_argument_is_no_batch():
    assert zg2(EMPTY, annotation="List[Tensor]") == []


def test_a_loop_over_a_tensor_argument_runs_the_model_once_per_row():
    assert zg2(LOOP, name="target_tokens", annotation="Tensor") == [("ZG204", 13)]


def test_a_loop_over_a_list_argument_or_a_convention_state_is_no_count():
    assert zg2(LOOP, name="target_tokens", annotation="List[int]") == []
    assert zg2(LOOP, name="hidden_states", annotation="torch.Tensor") == []
