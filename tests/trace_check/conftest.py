"""Running the trace check in-process on a small model written by the test."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from trace_helpers import HEADER


@pytest.fixture
def trace(tmp_path, monkeypatch):
    """`trace(source, entries=(), threshold=0, world=2, real=None)`: write `case.py` (`trace_helpers.HEADER`, then `source`)
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
