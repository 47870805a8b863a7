"""`zgen plan` as a user runs it: every parameter persistent, config errors, --gpu-mem, and one memory figure."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LLAMA_CONFIG = json.loads((REPO / "examples/llama/ds_config.json").read_text())
TINY = ["--model", f"{REPO}/examples/llama/model.py:build_tiny_model", "--seq-len", "128"]


@pytest.fixture
def config(tmp_path: Path):
    def write(**changes) -> str:
        (tmp_path / "ds.json").write_text(json.dumps({**LLAMA_CONFIG, **changes}, indent=1))
        return "ds.json"

    return write


def test_every_parameter_persistent_plots_and_explains_zero_units(zgen, tmp_path, config):
    code, out, err = zgen("plan", *TINY, "--config", config(), "--world-size", "2", "--plot", "memory.svg", cwd=tmp_path)
    assert code == 0, err
    assert "units (0;" in out
    assert "0 units: all 29 parameters (the largest has 16,384 elements) are at or below " \
           "`stage3_param_persistence_threshold` (100,000)" in out
    assert "set `zero_optimization.stage3_param_persistence_threshold` below 16,384" in out
    assert "step      all persistent" in out and "<- peak" in out
    svg = (tmp_path / "memory.svg").read_text()
    assert svg.startswith("<svg") and "peak" in svg


def test_emit_says_why_it_wrote_zero_units(zgen, tmp_path, config):
    code, out, _ = zgen("emit", *TINY, "--config", config(), "--world-size", "2", "--out", "train.py", cwd=tmp_path)
    assert code == 0 and ": 0 units, world size 2" in out
    assert "\n0 units: all 29 parameters" in out


def test_lowering_the_threshold_as_the_note_says_gives_units(zgen, tmp_path, config):
    zero = {**LLAMA_CONFIG["zero_optimization"], "stage3_param_persistence_threshold": 1000}
    code, out, _ = zgen("plan", *TINY, "--config", config(zero_optimization=zero), cwd=tmp_path)
    assert code == 0 and "units (4;" in out and "0 units" not in out


@pytest.mark.parametrize("flag", [[], ["--json"]])
def test_a_config_type_error_is_reported_like_check_and_exits_1(zgen, tmp_path, config, flag):
    code, out, _ = zgen("plan", *TINY, "--config", config(train_batch_size="sixteen"), *flag, cwd=tmp_path)
    assert code == 1
    assert re.search(r"ds.json:\d+:\d+: ZC012 `train_batch_size` must be an integer", out)
    assert "units (" not in out
    check_code, check_out, _ = zgen("check", "ds.json", cwd=tmp_path)
    assert check_code == 1 and "ZC012" in check_out


def _peak(out: str) -> str:
    return re.search(r"peak ([\d.]+ [KMG]iB) at ", out).group(1)


def test_gpu_mem_is_checked_and_check_and_plan_give_one_figure(zgen, tmp_path, config):
    """The 1.2B example at world size 1: check's estimate and plan's peak are the same number."""
    args = ["--model", f"{REPO}/examples/llama/model.py:build_model", "--config", config(), "--seq-len", "8192",
            "--world-size", "1"]
    code, out, _ = zgen("plan", *args, "--gpu-mem", "10GiB", cwd=tmp_path)
    assert code == 1
    peak = _peak(out)
    assert f"does not fit: the peak of {peak} per GPU (at bwd 0) is more than the 10.00 GiB given by --gpu-mem" in out
    assert "ZC601" in out

    code, out, _ = zgen("plan", *args, "--gpu-mem", "80GiB", cwd=tmp_path)
    assert code == 0 and f"fits: the peak of {peak} per GPU is within 80.00 GiB" in out

    (tmp_path / "model.py").symlink_to(REPO / "examples/llama/model.py")
    code, out, _ = zgen("check", "ds.json", "model.py", "--show-memory", "--seq-len", "8192", "--world-size", "1",
                        "--gpu-mem", "80GiB", cwd=tmp_path)
    total = re.search(r"^  total +([\d.]+) GiB", out, re.M).group(1)
    assert f"{total} GiB" == peak, out
    gathered = re.search(r"gathered parameters .*", out).group(0)
    assert "root unit 262,668,288" in gathered  # the tied embedding: gathered whenever a block runs


def test_plan_shows_when_hierarchical_sharding_pays(zgen, tmp_path, config):
    code, out, _ = zgen("plan", *TINY, "--config", config(), "--world-size", "2", cwd=tmp_path)
    assert code == 0
    section = out[out.index("communication per step"):]
    rows = {int(line.split()[0]): line.split() for line in section.splitlines()[2:10]}
    assert sorted(rows) == [8, 16, 32, 64, 128, 256, 512, 1024]
    flat, hpz = float(rows[16][1]), float(rows[16][2])
    assert float(rows[8][1]) == float(rows[8][2])  # one node: hpZ changes nothing
    assert hpz < flat  # two nodes: the backward gather stays on NVLink
    assert "this config: flat" in section
    zero = {**LLAMA_CONFIG["zero_optimization"], "zero_hpz_partition_size": 2}
    code, out, _ = zgen("plan", *TINY, "--config", config(zero_optimization=zero), "--world-size", "2", cwd=tmp_path)
    assert code == 0 and "this config: hpZ over 2 GPUs" in out
