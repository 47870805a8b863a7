"""Shared fixtures: the repository root, and running the CLI in-process."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture
def zgen(capsys, monkeypatch):
    """Call `zgen.cli.main(argv)` and return (exit code, stdout, stderr)."""
    from zgen.cli import main

    def run(*argv: str, cwd: Path | None = None):
        if cwd is not None:
            monkeypatch.chdir(cwd)
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    return run
