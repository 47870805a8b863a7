"""The pre-commit hooks: what `.pre-commit-hooks.yaml` runs behaves as a hook must.

pre-commit passes the staged files to `entry`; these tests run that entry on a
small repository the way pre-commit would (the hook environment install itself
is exercised by hand with `pre-commit try-repo`, see the README).
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _hooks() -> dict[str, dict[str, str]]:
    hooks, current = {}, None
    for line in (REPO / ".pre-commit-hooks.yaml").read_text().splitlines():
        m = re.match(r"^- id: (\S+)", line)
        if m:
            current = hooks.setdefault(m.group(1), {})
            continue
        m = re.match(r"^  (\w+): (.*)$", line)
        if m and current is not None:
            current[m.group(1)] = m.group(2).strip()
    return hooks


@pytest.fixture
def project(tmp_path):
    shutil.copy(REPO / "examples/llama/model.py", tmp_path / "model.py")
    shutil.copy(REPO / "examples/llama/ds_config.json", tmp_path / "ds_config.json")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.zgen]\nmodel = "model.py:build_model"\nconfig = "ds_config.json"\nworld-size = 8\n'
    )
    return tmp_path


def test_check_hook_runs_in_one_process():
    hook = _hooks()["zgen-check"]
    assert hook["entry"].startswith("zgen check")
    assert hook["require_serial"] == "true"  # never split a model and its config across processes


def test_check_hook_pairs_a_staged_model_with_its_config(zgen, project):
    entry = shlex.split(_hooks()["zgen-check"]["entry"])[1:]
    assert zgen(*entry, "model.py", cwd=project)[0] == 0
    cfg = json.loads((project / "ds_config.json").read_text())
    cfg["train_batch_size"] = 32
    (project / "ds_config.json").write_text(json.dumps(cfg, indent=1))
    code, out, _ = zgen(*entry, "model.py", cwd=project)  # only the model is staged
    assert code == 1
    assert "ds_config.json" in out and "ZC101" in out


def test_check_hook_with_no_files_checks_the_project(zgen, project):
    (project / "bad.py").write_text(
        "import torch.distributed as dist\nfrom torch import nn\n\n\nclass M(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.block = nn.Linear(4, 4)\n\n"
        "    def forward(self, x):\n        if dist.get_rank() == 0:\n            x = self.block(x)\n        return x\n"
    )
    entry = shlex.split(_hooks()["zgen-check"]["entry"])[1:]
    code, out, _ = zgen(*entry, cwd=project)
    assert code == 1 and "bad.py:11:12: ZG201" in out


def test_emit_check_hook_is_declared():
    hook = _hooks()["zgen-emit-check"]
    assert hook["entry"] == "zgen emit --check"
    assert hook["pass_filenames"] == "false"


def test_check_hook_runs_on_every_input_zgen_reads():
    files = re.compile(_hooks()["zgen-check"]["files"])
    for name in ("model.py", "configs/ds.json", "configs/ds_z3.hjson", "pyproject.toml", "sub/pyproject.toml"):
        assert files.search(name), name
    for name in ("README.md", "setup.cfg", "notes.toml"):
        assert not files.search(name), name


def test_a_settings_change_that_changes_the_verdict_fails_the_hook(zgen, project):
    cfg = json.loads((project / "ds_config.json").read_text())
    cfg["train_batch_size"] = 16  # 1 x 2 x 8: right for world size 8 only among 3 and 8
    (project / "ds_config.json").write_text(json.dumps(cfg, indent=1))
    entry = shlex.split(_hooks()["zgen-check"]["entry"])[1:]
    assert zgen(*entry, "pyproject.toml", cwd=project)[0] == 0
    text = (project / "pyproject.toml").read_text().replace("world-size = 8", "world-size = 3")
    (project / "pyproject.toml").write_text(text)
    code, out, _ = zgen(*entry, "pyproject.toml", cwd=project)  # only pyproject.toml is staged
    assert code == 1 and "ds_config.json" in out and "ZC1" in out


def test_an_hjson_config_is_checked(zgen, project):
    (project / "ds.hjson").write_text("{\n  train_batch_size: 30  // not a multiple of 8\n  zero_optimization: {stage: 3}\n}\n")
    entry = shlex.split(_hooks()["zgen-check"]["entry"])[1:]
    code, out, _ = zgen(*entry, "ds.hjson", cwd=project)
    assert code == 1 and "ds.hjson:2:" in out


def test_zgens_own_plan_file_is_not_a_config(zgen, project):
    shutil.copy(REPO / "bench/train_gen_llama.plan.json", project / "train_gen.plan.json")
    entry = shlex.split(_hooks()["zgen-check"]["entry"])[1:]
    code, out, _ = zgen(*entry, "train_gen.plan.json", cwd=project)
    assert code == 0 and "ZC" not in out
    code, out, _ = zgen("check", ".", "--output-format", "concise", cwd=project)
    assert "train_gen.plan.json" not in out
