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


@pytest.fixture
def run_together():
    """Start commands at once in a folder, wait for all, and fail naming the first that exited non-zero.

    `run(cwd, (command, output name), ...)`: each command's stdout and stderr go to the named file in `cwd` (a file,
    not a pipe, so no command waits for its reader), with `OMP_NUM_THREADS=1`. Independent script runs share the
    machine's cores: a world-size-1 run alone leaves a core idle that a world-size-2 run started with it uses.
    """
    import subprocess

    def run(cwd: Path, *commands: tuple[list[str], str], timeout: float = 300) -> None:
        env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
        started = []
        try:
            for cmd, name in commands:
                with open(cwd / name, "w") as out:
                    started.append((cmd, name, subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out,
                                                                stderr=subprocess.STDOUT)))
            for cmd, name, proc in started:
                code = proc.wait(timeout=timeout)
                assert code == 0, f"{' '.join(cmd)} failed:\n{(cwd / name).read_text()[-4000:]}"
        finally:
            for _cmd, _name, proc in started:
                if proc.poll() is None:  # timed out, or another command failed: leave no process behind
                    proc.kill()
                    proc.wait()

    return run
