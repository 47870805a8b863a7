"""Running the trace check in-process on a small model written by the test."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

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


@pytest.fixture
def trace(tmp_path, monkeypatch):
    """`trace(source, entries=(), threshold=0, world=2, real=None)`: write `case.py` (the header above, then `source`)
    and return the trace check's findings as (code, line) pairs sorted, plus the findings themselves."""
    from zgen.plan.trace import Target
    from zgen.trace_check import TraceRequest, trace_check

    monkeypatch.chdir(tmp_path)

    def run(source: str, *, entries: tuple[str, ...] = (), threshold: int = 0, world: int = 2,
            factory: str = "build_model", real: bool | None = None):
        path = tmp_path / "case.py"
        path.write_text(HEADER + textwrap.dedent(source))
        request = TraceRequest(
            model=Target("case.py", factory, "--model"), root=Path(tmp_path),
            inputs=Target("case.py", "inputs", "--inputs"),
            entries=tuple(Target("case.py", e, "--entry") for e in entries),
            world_size=world, seq_len=8, persistence_threshold=threshold, real=real)
        result = trace_check(request)
        return sorted((f.code, f.line) for f in result.findings), result

    return run


def line_of(source: str, marker: str) -> int:
    """The line of `case.py` (header included) holding `marker`."""
    lines = (HEADER + textwrap.dedent(source)).splitlines()
    return next(i for i, text in enumerate(lines, 1) if marker in text)
