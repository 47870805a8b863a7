"""End to end on CPU: `zgen emit`, then the generated script under torchrun (gloo) at world sizes 1 and 2.

The per-step losses of the two runs must match (same global batch, fp32) and
fall on the synthetic task; resuming from a checkpoint must continue exactly
as the uninterrupted run did.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

CONFIG = {
    "train_batch_size": 4,  # world 2: micro 1 x accumulation 2; world 1: accumulation 4
    "train_micro_batch_size_per_gpu": 1,
    "gradient_clipping": 1.0,
    "steps_per_print": 1,
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-2, "betas": [0.9, 0.95], "weight_decay": 0.0}},
    "zero_optimization": {
        "stage": 3,
        "stage3_param_persistence_threshold": 100,
        "stage3_prefetch_bucket_size": 10000,
        "stage3_max_live_parameters": 100000,
        "stage3_max_reuse_distance": 0,
    },
}


def _run(cmd: list[str], cwd: Path) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}"


def _torchrun(n: int) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={n}"]


def _log(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _emit(d: Path, model: str) -> Path:
    from zgen.cli import main

    (d / "ds_config.json").write_text(json.dumps(CONFIG))
    cwd = Path.cwd()
    os.chdir(d)
    try:
        code = main(["emit", "--model", f"{REPO}/examples/models/{model}.py:build_model", "--config", "ds_config.json",
                     "--world-size", "2", "--seq-len", "64", "--out", "train_gen.py"])
    finally:
        os.chdir(cwd)
    assert code == 0
    return d / "train_gen.py"


def _same_losses(a: list[dict], b: list[dict], tol: float) -> None:
    assert [r["step"] for r in a] == [r["step"] for r in b]
    for x, y in zip(a, b):
        assert abs(x["loss"] - y["loss"]) <= tol, (x, y)


SCRIPT = ["train_gen.py", "--device", "cpu", "--steps", "5"]


def test_external_parameter_model_world_sizes_agree_losses_fall_and_resume_is_exact(tmp_path, run_together):
    """The root reads block 0's weight (an external parameter the plan attaches): the ZG301 hazard is resolved."""
    script = _emit(tmp_path, "child_weight")
    assert "# Hazards the plan resolves for zgen.runtime" in script.read_text().split('"""')[0]
    d = tmp_path
    run_together(d, ([sys.executable, *SCRIPT, "--checkpoint-every", "0", "--log-jsonl", "w1.jsonl"], "w1.out"),
                 ([*_torchrun(2), *SCRIPT, "--checkpoint-every", "3", "--checkpoint-dir", "ck",
                   "--log-jsonl", "w2.jsonl"], "w2.out"))
    _run([*_torchrun(2), *SCRIPT, "--checkpoint-every", "0", "--resume", "ck/step_000003", "--log-jsonl", "r2.jsonl"], d)

    w1, w2, r2 = _log(d / "w1.jsonl"), _log(d / "w2.jsonl"), _log(d / "r2.jsonl")
    assert [r["step"] for r in w2] == [1, 2, 3, 4, 5]
    _same_losses(w1, w2, 1e-4)
    losses = [r["loss"] for r in w2]
    assert losses[-1] < losses[0] - 0.1 and sum(losses[-2:]) < sum(losses[:2]), losses
    assert all(r["tokens_per_s"] > 0 and r["peak_mem_bytes"] > 0 for r in w2)
    assert [r["step"] for r in r2] == [4, 5]
    _same_losses(w2[3:], r2, 1e-6)


def test_tied_embedding_model_world_sizes_agree(tmp_path, run_together):
    _emit(tmp_path, "tied")
    run_together(tmp_path, ([sys.executable, *SCRIPT, "--checkpoint-every", "0", "--log-jsonl", "w1.jsonl"], "w1.out"),
                 ([*_torchrun(2), *SCRIPT, "--checkpoint-every", "0", "--log-jsonl", "w2.jsonl"], "w2.out"))
    w1, w2 = _log(tmp_path / "w1.jsonl"), _log(tmp_path / "w2.jsonl")
    _same_losses(w1, w2, 1e-4)
    assert w2[-1]["loss"] < w2[0]["loss"]
