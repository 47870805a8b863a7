"""A project's scripts kept in a folder of their own (`scripts/base_train.py`, no `__init__.py`) import the project's
package by its name (`from nanochat.engine import Engine`), run from the project's top (`python -m
scripts.base_train`). Wherever zgen itself is started, the package a few directories above the script is where those
imports resolve (`project._project_roots`), after the script's own directory and the environment: what the script
gets from the package (a model a loader of the package builds and hands back through a chain of calls, a plain
class holding the model) is then known. Look-alike: a package of that name in no directory above the script."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

MODEL = """
    import torch
    from torch import nn


    class GPT(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.wte = nn.Embedding(50000, d)
            self.head = nn.Linear(d, 50000)

        def forward(self, idx):
            return self.head(self.wte(idx))
"""
LOADER = """
    from proj.model import GPT


    def build_model(path, step):
        meta = {"step": step}
        model = GPT(64)
        return model, None, meta


    def load_model_from_dir(path, step=None):
        model, tokenizer, meta = build_model(path, step)
        return model, tokenizer, meta


    def load_model(source, *args, **kwargs):
        return load_model_from_dir(f"/ckpt/{source}", *args, **kwargs)
"""
SCRIPT = """
    import torch
    from proj.checkpoint import load_model

    model, tokenizer, meta = load_model("sft", step=3)
    for step in range(10):
        loss = model(torch.zeros(1, 4, dtype=torch.long)).sum()
        loss.backward()
        if step % 5 == 0:
            torch.save(model.state_dict(), f"step{step}.pt")
"""


def _project(root: Path) -> Path:
    package = root / "proj"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "model.py").write_text(textwrap.dedent(MODEL))
    (package / "checkpoint.py").write_text(textwrap.dedent(LOADER))
    scripts = root / "scripts"
    scripts.mkdir()
    (scripts / "train.py").write_text(textwrap.dedent(SCRIPT))
    return scripts / "train.py"


def _check(path: Path, cwd: Path) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONPATH")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])  # zgen itself, not the checked project
    out = subprocess.run(
        [sys.executable, "-m", "zgen", "check", "--no-cache", "--jobs", "1", "--output-format", "concise", str(path)],
        cwd=cwd, env=env, capture_output=True, text=True, check=False,
    )
    assert out.returncode in (0, 1), out.stdout + out.stderr
    return [line.split(" ")[1] for line in out.stdout.splitlines() if line.startswith(str(path))]


def test_a_scripts_folder_reads_its_projects_package_from_anywhere(tmp_path):
    script = _project(tmp_path / "repo")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # the model the package's loader builds, handed back through two calls and unpacked: its state saved
    assert _check(script, elsewhere) == ["ZG108"]


def test_a_package_of_that_name_beside_no_directory_above_the_script_is_not_read(tmp_path):
    script = _project(tmp_path / "repo")
    moved = tmp_path / "other" / "proj"
    (tmp_path / "other").mkdir()
    (tmp_path / "repo" / "proj").rename(moved)
    assert _check(script, tmp_path) == []
