"""What a file's imports resolve to depends on the file (its package, the environment), never on which other files
the same run or process checks: pre-commit passes only the changed files."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

LIBRARY = """
    import torch
    from torch import nn


    class Core(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.table = nn.Parameter(torch.randn(4096, d))

        def forward(self, x):
            return x @ self.table.T

        def encode(self, x):
            return x @ self.table.T
    """
USER = """
    from libpkg.layers import Core


    class Sampler:
        def __init__(self, d):
            self.core = Core(d)

        def step(self, x):
            return self.core.encode(x)
    """


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.parent / "__init__.py").write_text("")
    path.write_text(textwrap.dedent(text))


def _check(tmp_path: Path, *files: str, library_path: str | None = None) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONPATH")}
    if library_path is not None:  # the library installed: on the import path of the interpreter zgen runs in
        env["PYTHONPATH"] = library_path
    out = subprocess.run(
        [sys.executable, "-m", "zgen", "check", "--no-cache", "--jobs", "1", "--output-format", "concise", *files],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=False,
    )
    assert out.returncode in (0, 1), out.stdout + out.stderr
    return [line for line in out.stdout.splitlines() if line.startswith("a/app/model.py:")]


def _two_projects(tmp_path: Path) -> None:
    # side by side: `a/app` imports `libpkg`, which lives in `b/`, a directory on no import path unless installed
    _write(tmp_path / "a" / "app" / "model.py", USER)
    _write(tmp_path / "b" / "libpkg" / "layers.py", LIBRARY)


def test_a_file_s_findings_do_not_change_with_the_other_files_of_the_run(tmp_path):
    _two_projects(tmp_path)
    alone = _check(tmp_path, "a/app/model.py")
    together = _check(tmp_path, "a/app/model.py", "b/libpkg/layers.py")
    library_first = _check(tmp_path, "b/libpkg/layers.py", "a/app/model.py")
    assert alone == together == library_first
    assert not any("ZG303" in line for line in alone)  # `Core` is unknown: nothing is guessed about it


def test_an_installed_library_resolves_whether_or_not_its_files_are_checked(tmp_path):
    _two_projects(tmp_path)
    installed = str(tmp_path / "b")
    alone = _check(tmp_path, "a/app/model.py", library_path=installed)
    together = _check(tmp_path, "b/libpkg/layers.py", "a/app/model.py", library_path=installed)
    assert any(line.startswith("a/app/model.py:10:16: ZG303") for line in alone), alone
    assert alone == together
