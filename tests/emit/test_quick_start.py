"""The newcomer's path, as commands: plan --plot on the tiny example, emit for world size 2, train 3 steps on
CPU with a checkpoint, resume to step 4; a world size the global batch does not allow; --help without torch;
the smoke test the docstring suggests for a model too big for a CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TINY = ["--model", "examples/llama/model.py:build_tiny_model", "--config", "examples/llama/ds_config.json",
        "--seq-len", "128"]


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _torchrun(n: int, *args: str) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={n}", *args]


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A fresh folder holding the examples (as a clone would) and the script emitted for world size 2."""
    d = tmp_path_factory.mktemp("quick_start")
    (d / "examples").symlink_to(REPO / "examples")
    proc = _run([sys.executable, "-m", "zgen", "emit", *TINY, "--world-size", "2", "--out", "train_tiny.py"], d)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert (d / "train_tiny.plan.json").is_file()
    return d


def _no_traceback(proc: subprocess.CompletedProcess) -> None:
    """What a user checks: exit 0 and no traceback (warnings from torch or gloo are theirs, not ours)."""
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.slow
def test_plot_train_checkpoint_and_resume(project, run_together):
    # The plot and the first training run are independent: started together, they share the two cores.
    run_together(project, ([sys.executable, "-m", "zgen", "plan", *TINY, "--plot", "memory.svg"], "plan.out"),
                 (_torchrun(2, "train_tiny.py", "--steps", "3", "--device", "cpu", "--log-jsonl", "log.jsonl"),
                  "first.out"))
    assert "Traceback" not in (project / "plan.out").read_text()
    assert (project / "memory.svg").read_text().startswith("<svg")
    first = (project / "first.out").read_text()
    assert "Traceback" not in first, first
    assert "saved checkpoint checkpoints/step_000003" in first
    resumed = _run(_torchrun(2, "train_tiny.py", "--steps", "4", "--device", "cpu", "--log-jsonl", "log.jsonl",
                             "--resume", "checkpoints/step_000003"), project)
    _no_traceback(resumed)
    assert "resuming from checkpoints/step_000003 after step 3" in resumed.stdout
    log = [json.loads(line) for line in (project / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == [1, 2, 3, 4]  # each step once, the resumed one appended

    # Resuming from an earlier checkpoint replaces the steps after it instead of repeating them.
    again = _run(_torchrun(2, "train_tiny.py", "--steps", "4", "--device", "cpu", "--log-jsonl", "log.jsonl",
                           "--resume", "checkpoints/step_000003", "--checkpoint-every", "0"), project)
    _no_traceback(again)
    log2 = [json.loads(line) for line in (project / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log2] == [1, 2, 3, 4] and abs(log2[3]["loss"] - log[3]["loss"]) < 1e-6


@pytest.mark.slow
def test_a_world_size_the_global_batch_does_not_allow_stops_with_one_line(project):
    proc = _run(_torchrun(3, "train_tiny.py", "--steps", "1", "--device", "cpu"), project)
    assert proc.returncode != 0
    lines = [x for x in proc.stderr.splitlines() if x.startswith("error: ")]
    assert lines == ["error: train_batch_size (4) is not a multiple of micro_batch_size (1) x world size (3); launch "
                     "one of the world sizes 1, 2, 4, or change the config's batch sizes and regenerate with "
                     "--world-size 3"], proc.stderr
    assert "exitcode  : 2" in proc.stderr and "[rank" not in proc.stderr  # no rank printed a traceback


def test_the_script_runs_at_another_world_size_that_divides(project):
    proc = _run([sys.executable, "train_tiny.py", "--steps", "1", "--device", "cpu", "--checkpoint-every", "0"],
                project)
    _no_traceback(proc)
    assert "micro batch 1 x accumulation 4 x world 1" in proc.stdout


def test_help_does_not_import_torch(project):
    probe = ("import runpy, sys\nsys.argv = ['train_tiny.py', '--help']\n"
             "try:\n    runpy.run_path('train_tiny.py', run_name='__main__')\nexcept SystemExit:\n    pass\n"
             "print('torch loaded' if 'torch' in sys.modules else 'no torch')")
    proc = _run([sys.executable, "-c", probe], project)
    assert proc.returncode == 0 and "--resume DIR" in proc.stdout and proc.stdout.rstrip().endswith("no torch")


def test_docstring_smoke_test_fits_the_model(project, zgen, monkeypatch):
    tiny = (project / "train_tiny.py").read_text().split('"""')[1]
    assert "torchrun --standalone --nproc_per_node 2 train_tiny.py --device cpu --steps 5" in tiny
    code, _, err = zgen("emit", "--model", "examples/llama/model.py:build_model", "--config",
                        "examples/llama/ds_config.json", "--seq-len", "8192", "--out", "train_big.py", cwd=project)
    assert code == 0, err
    big = (project / "train_big.py").read_text().split('"""')[1]
    assert "--device cpu --steps 5" not in big.split("A CPU smoke test")[1].split("zgen emit")[0]
    assert ("zgen emit --model examples/llama/model.py:build_tiny_model --config examples/llama/ds_config.json "
            "--world-size 2 --seq-len 128 --out train_smoke.py\n"
            "    torchrun --standalone --nproc_per_node 2 train_smoke.py --device cpu --steps 5") in big
