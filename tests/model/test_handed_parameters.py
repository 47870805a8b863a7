"""Parameters a class's own calls bind to a value that differs per rank (`taint.handed_parameters`): a helper
method that picks a head by the task label its caller took from the batch, runs as many columns as that label's
index, or is handed the rank; against helpers handed configured values only."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

BASE = """
import random
import torch
import torch.distributed as dist
from torch import nn


class MultiTask(nn.Module):
    def __init__(self, tasks=(0, 1, 2)):
        super().__init__()
        self.known_tasks = list(tasks)
        self.heads = nn.ModuleDict({{str(t): nn.Linear(512, 512) for t in tasks}})
        self.columns = nn.ModuleList([nn.Linear(512, 512) for _ in tasks])
        self.column_of = {{t: i for i, t in enumerate(tasks)}}
        self.block = nn.Linear(512, 512)

    def forward(self, x, task_labels):
        out = torch.zeros_like(x)
{body}
        return out

    def forward_all(self, x):
        return [self.run_task(x, t) for t in self.known_tasks]
"""


def codes(body: str, helper: str) -> list[str]:
    """The ZG2 codes found inside the helper methods (the caller's own loop over the labels is reported anyway)."""
    source = BASE.format(body=textwrap.indent(textwrap.dedent(body), " " * 8))
    first = source.count("\n") + 1
    source += textwrap.indent(textwrap.dedent(helper), "    ")
    return sorted({f.code for f in check_source("m.py", source) if f.code.startswith("ZG2") and f.line > first})


PER_TASK = """
    for task in task_labels.unique():
        mask = task_labels == task
        out[mask] = self.run_task(x[mask], task.item())
"""


def test_a_head_picked_by_the_task_label_the_caller_took_from_the_batch():
    assert codes(PER_TASK, """
        def run_task(self, x, task):
            key = str(task)
            return self.heads[key](x)
    """) == ["ZG203"]


def test_as_many_columns_as_the_index_of_the_handed_task():
    assert codes(PER_TASK, """
        def run_task(self, x, task):
            col = self.column_of[task]
            for i in range(col + 1):
                x = self.columns[i](x)
            return x
    """) == ["ZG203"]


def test_a_helper_handed_the_rank_picks_a_column():
    assert codes("out = self.own_column(x, dist.get_rank())", """
        def own_column(self, x, rank_id):
            return self.columns[rank_id](x)
    """) == ["ZG201"]


def test_helpers_handed_configured_values_decide_the_same_everywhere():
    assert codes("out = self.run_task(x, self.known_tasks[0])\nout = self.maybe_block(out, self.training)", """
        def run_task(self, x, task):
            return self.heads[str(task)](x)

        def maybe_block(self, x, skip):
            if skip:
                return x
            return self.block(x)
    """) == []
