"""What a file's imports resolve to does not depend on which files were checked before it in the same process."""

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


def test_a_package_checked_in_the_same_run_resolves_for_a_file_checked_before_it(tmp_path):
    # two projects side by side: `a/app` imports `libpkg`, which lives in `b/`, a directory on no import path;
    # `a/app/model.py` is checked first (paths are sorted), one worker, so only the run's own roots can resolve it
    _write(tmp_path / "a" / "app" / "model.py", USER)
    _write(tmp_path / "b" / "libpkg" / "layers.py", LIBRARY)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
    out = subprocess.run(
        [sys.executable, "-m", "zgen", "check", "--no-cache", "--jobs", "1", "--output-format", "concise",
         "a/app/model.py", "b/libpkg/layers.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=False,
    )
    assert "a/app/model.py:10:16: ZG303" in out.stdout, out.stdout + out.stderr
