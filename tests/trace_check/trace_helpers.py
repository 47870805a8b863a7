"""What the trace-check tests share: the header of every `case.py`, a model, and line lookup."""

from __future__ import annotations

import textwrap

HEADER = '''\
import random
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn


def inputs(batch_size, seq_len, generator):
    ids = torch.randint(0, 32, (batch_size, seq_len), generator=generator)
    return {"input_ids": ids, "labels": ids}
'''


# Experts called only for the tokens routed to them: which ones run depends on the data (ZG203).
EXPERTS = '''
class Experts(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(8, 2)
        self.experts = nn.ModuleList(nn.Linear(8, 8) for _ in range(2))

    def forward(self, x):
        choice = self.gate(x).argmax(-1)
        out = torch.zeros_like(x)
        for i, expert in enumerate(self.experts):
            rows = torch.where(choice == i)
            if rows[0].numel() == 0:  # hit
                continue
            out[rows] = expert(x[rows])
        return out
'''


def line_of(source: str, marker: str) -> int:
    """The line of `case.py` (header included) holding `marker`."""
    lines = (HEADER + textwrap.dedent(source)).splitlines()
    return next(i for i, text in enumerate(lines, 1) if marker in text)
