"""`zgen emit` and ZG103: a parent's init into built children is lost under DeepSpeed's zero.Init, but
zgen's runtime runs the model's own init methods after building on meta, so there it lands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MODELS = REPO / "examples/models"
ARGS = ["--model", f"{MODELS}/patch_vit.py:build_model", "--inputs", f"{MODELS}/patch_vit.py:make_inputs",
        "--loss", f"{MODELS}/patch_vit.py:cross_entropy", "--config", "ds_config.json",
        "--seq-len", "1", "--world-size", "2", "--out", "train.py"]
CONFIG = {"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2,
          "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}},
          "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 100}}


@pytest.fixture(autouse=True)
def config(tmp_path):
    (tmp_path / "ds_config.json").write_text(json.dumps(CONFIG))


def test_check_reports_the_parents_init_writes(zgen):
    code, out, _ = zgen("check", str(MODELS / "patch_vit.py"), "--output-format", "concise")
    assert code == 1 and out.count("ZG103") == 2


def test_emit_accepts_writes_inside_an_init_method_the_runtime_runs(zgen, tmp_path):
    code, out, err = zgen("emit", *ARGS, cwd=tmp_path)
    assert code == 0, out + err
    script = (tmp_path / "train.py").read_text()
    assert "ZG103" in script and "runs `init_weights` after building on meta" in script


def test_emit_refuses_them_when_init_replaces_the_models_own(zgen, tmp_path):
    (tmp_path / "my_init.py").write_text("def init(module):\n    pass\n")
    code, out, err = zgen("emit", *ARGS, "--init", str(tmp_path / "my_init.py") + ":init", cwd=tmp_path)
    assert code == 1 and "ZG103" in out and "emit refused" in err
    assert not (tmp_path / "train.py").exists()
