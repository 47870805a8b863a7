"""Every script under bench/ compiles: benchmarks are run by hand, so a broken merge there is otherwise found late."""

from __future__ import annotations

from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.mark.parametrize("script", sorted(BENCH.rglob("*.py")), ids=lambda p: str(p.relative_to(BENCH)))
def test_bench_script_compiles(script: Path):
    compile(script.read_text(encoding="utf-8"), str(script), "exec")
