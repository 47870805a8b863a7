"""End-to-end: `zgen check` on the bundled examples prints exactly the kept golden output.

Regenerate after a deliberate change with `ZGEN_UPDATE_GOLDEN=1 pytest tests/cli/test_golden.py`
and review the diff like code.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CASES = sorted((REPO / "examples" / "hazards").glob("*.py"))


def _golden(path: Path, actual: str) -> None:
    if os.environ.get("ZGEN_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual)
    assert path.exists(), f"no golden file {path}; run with ZGEN_UPDATE_GOLDEN=1"
    assert actual == path.read_text()


@pytest.mark.parametrize("example", CASES, ids=lambda p: p.stem)
def test_hazard_example_output(zgen, example):
    rel = example.relative_to(REPO).as_posix()
    code, out, err = zgen("check", rel, "--no-cache", "--output-format", "full", cwd=REPO)
    assert err == ""
    assert code == (0 if example.stem.startswith("clean") else 1)
    _golden(REPO / "examples" / "hazards" / "expected" / f"{example.stem}.txt", out)
