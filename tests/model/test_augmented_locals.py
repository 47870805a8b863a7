"""An augmented assignment keeps what its target holds (issue 20, blind27's majority vote).

`counts /= self.num_views` divides a tensor of votes by a setting; it does not make `counts` the module a setting of
unknown kind might be. Before, the `while` that breaks ties on `counts[row, :].max()` read as a loop calling a
module on this rank's data (ZG204). Look-alike, still reported: the same loop calling the core model.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

VOTE = """
import torch
from torch import nn


def _checks(num_views: int) -> None:
    if num_views < 1:
        raise ValueError("num_views")


class Vote(nn.Module):
    def __init__(self, core_model: nn.Module, num_views: int) -> None:
        super().__init__()
        _checks(num_views)
        self.core_model = core_model
        self.num_views = num_views

    def eval_forward(self, x):
        votes = self.core_model(x).argmax(-1)
        counts = torch.zeros(x.shape[0], 10)
        for row, vote in enumerate(votes):
            counts[row, vote] += 1
            top = counts[row, :].max()
            i = 0
            while i < self.num_views and torch.sum(counts[row, :] == top) > 1:
                counts[row, vote] += 1
                top = {again}
                i += 1
        counts /= self.num_views
        return counts

    def forward(self, x):
        if self.training:
            return self.core_model(x)
        return self.eval_forward(x)
"""


def vote_codes(again: str) -> list[str]:
    return [f.code for f in check_source("vote.py", textwrap.dedent(VOTE).format(again=again))]


def test_a_tie_break_loop_over_a_tensor_divided_by_a_setting_runs_no_module():
    assert vote_codes("counts[row, :].max()") == []


def test_a_tie_break_loop_that_runs_the_core_model_again_diverges():
    assert "ZG204" in vote_codes("self.core_model(x)[row].max()")
