"""World sizes 2 and 3 on CPU (gloo): the engine equals plain training, FSDP2, and itself after a resume.

Each world size is one torchrun-style launch (env://) that runs every
scenario (process start-up dominates the cost, so scenarios share it); world
size 3 resumes from the checkpoints world size 2 wrote. The compiled
scenarios run in their own launches, marked slow.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import runtime_toy as T

HERE = Path(__file__).resolve().parent
FP32_TOL = 1e-5


def _launch(world: int, out: Path, suite: str, *extra: str) -> dict:
    # This process hosts the rendezvous store, as torchrun's agent does: the port is bound
    # before any worker starts and stays bound, so no other process can take it in between.
    from torch.distributed import TCPStore

    store = TCPStore("127.0.0.1", 0, world + 1, is_master=True, wait_for_workers=False)
    procs = []
    for rank in range(world):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(store.port), TORCHELASTIC_USE_AGENT_STORE="True",
                   OMP_NUM_THREADS="1")
        env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
        log = open(out / f"log_{suite}_w{world}_r{rank}.txt", "w")
        procs.append((subprocess.Popen([sys.executable, str(HERE / "runtime_worker.py"), str(out), suite, *extra],
                                       env=env, stdout=log, stderr=subprocess.STDOUT), log))
    codes = []
    try:
        for p, log in procs:
            try:
                codes.append(p.wait(timeout=240))
            finally:
                log.close()
    finally:
        for p, _ in procs:
            if p.poll() is None:  # timed out: leave no worker behind
                p.kill()
                p.wait()
        del store
    for rank, code in enumerate(codes):
        # gloo can abort while tearing down after the work is done; the marker says the work finished.
        if not (out / f"done_{suite}_w{world}_r{rank}").exists():
            text = (out / f"log_{suite}_w{world}_r{rank}.txt").read_text()[-4000:]
            pytest.fail(f"rank {rank} of {world} exited with {code} before finishing:\n{text}")
    return torch.load(out / f"{suite}_w{world}.pt")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[int, dict]:
    out = tmp_path_factory.mktemp("dist")
    w2 = _launch(2, out, "main")
    w3 = _launch(3, out, "main", str(out))
    return {2: w2, 3: w3}


@pytest.fixture(scope="module")
def compiled_runs(tmp_path_factory) -> dict[int, dict]:
    out = tmp_path_factory.mktemp("dist_compiled")
    return {w: _launch(w, out, "compiled") for w in (2, 3)}


@pytest.fixture(scope="module")
def hpz_runs(tmp_path_factory) -> dict:
    return _launch(4, tmp_path_factory.mktemp("dist_hpz"), "hpz")


@pytest.fixture(scope="module")
def reference() -> dict:
    three, _, norms = T.reference(3)
    frozen, _, frozen_norms = T.reference(3, frozen=True)
    sgd3, _, sgd_norms = T.reference(3, optimizer=T.sgd)
    return {3: three, 4: T.reference(4)[0], "norm": norms[-1], "frozen": frozen, "frozen_norm": frozen_norms[-1],
            "sgd": sgd3, "sgd4": T.reference(4, optimizer=T.sgd)[0], "sgd_norm": sgd_norms[-1]}


def _assert_close(got: dict, want: dict, tol: float) -> None:
    diffs = T.max_diff(got, want)
    worst = max(diffs, key=diffs.get)
    assert diffs[worst] <= tol, f"`{worst}` differs by {diffs[worst]:.3g} (tolerance {tol})"


@pytest.mark.parametrize("world", [2, 3])
@pytest.mark.parametrize(
    "scenario",
    ["default", "explicit", "persistent", "meta", "recompute_inside", "recompute_units", "offload", "offload_explicit",
     "offload_param", "recompute_plan", "offload_partial"],
)
def test_fp32_equals_plain_adamw(runs, reference, world, scenario):
    _assert_close(runs[world][scenario]["state"], reference[3], FP32_TOL)


@pytest.mark.parametrize("world", [2, 3])
@pytest.mark.parametrize("what", ["offload", "offload_param"])
def test_offloaded_updates_started_in_backward_are_bit_equal(runs, world, what):
    early, waiting = runs[world][f"{what}_early"], runs[world][f"{what}_waiting"]
    assert early["early_starts"] > 0 and waiting["early_starts"] == 0
    assert early["losses"] == waiting["losses"] and early["grad_norm"] == waiting["grad_norm"]
    assert [k for k in early["state"] if not torch.equal(early["state"][k], waiting["state"][k])] == []


@pytest.mark.parametrize("world", [2, 3])
def test_partial_offload_keeps_the_first_units_on_the_device_with_the_same_bits(runs, world):
    partial, whole = runs[world]["offload_partial_early"], runs[world]["offload_early"]
    assert partial["on_device"] and partial["offloaded"]  # some units of each kind
    assert partial["early_starts"] > 0
    assert partial["losses"] == whole["losses"]
    assert [k for k in partial["state"] if not torch.equal(partial["state"][k], whole["state"][k])] == []


@pytest.mark.parametrize("world", [2, 3])
def test_fused_head_loss_equals_plain_adamw(runs, world):
    _assert_close(runs[world]["head_loss"]["state"], T.reference(3, model=T.LMNet)[0], FP32_TOL)


@pytest.mark.slow
@pytest.mark.parametrize("world", [2, 3])
@pytest.mark.parametrize("scenario", ["compiled", "compiled_explicit"])
def test_compiled_fp32_equals_plain_adamw(compiled_runs, reference, world, scenario):
    _assert_close(compiled_runs[world][scenario]["state"], reference[3], FP32_TOL)


@pytest.mark.parametrize("world", [2, 3])
@pytest.mark.parametrize("scenario", ["sgd", "sgd_offload"])
def test_client_sgd_equals_plain_sgd(runs, reference, world, scenario):
    assert reference["sgd_norm"] > T.CLIP  # clipping was active in the last step
    _assert_close(runs[world][scenario]["state"], reference["sgd"], FP32_TOL)
    assert runs[world][scenario]["grad_norm"] == pytest.approx(reference["sgd_norm"], rel=1e-5)


@pytest.mark.parametrize("world", [2, 3])
def test_offload_bf16_tracks_fp32(runs, world):
    fp32, bf16 = runs[world]["default"]["losses"], runs[world]["offload_bf16"]["losses"]
    assert all(abs(a - b) <= 0.05 * abs(a) for a, b in zip(fp32, bf16))
    # the offloaded master is fp32: the same update as the in-device fp32 master with bf16 compute
    _assert_close(runs[world]["offload_bf16"]["state"], runs[world]["bf16"]["state"], 1e-6)


@pytest.mark.parametrize("world", [2, 3])
def test_parameter_offload_equals_plain_training(runs, reference, world):
    # bf16 shards in host memory, copied up before each gather: the same update as without them
    _assert_close(runs[world]["offload_param_explicit"]["state"], reference["frozen"], FP32_TOL)
    _assert_close(runs[world]["offload_param_bf16"]["state"], runs[world]["offload_bf16"]["state"], 0.0)


@pytest.mark.parametrize("world", [2, 3])
def test_hpz_equals_plain_adamw(runs, reference, world):
    _assert_close(runs[world]["hpz"]["state"], reference[3], FP32_TOL)
    _assert_close(runs[world]["hpz_explicit"]["state"], reference["frozen"], FP32_TOL)


@pytest.mark.slow
@pytest.mark.parametrize("scenario", ["hpz", "hpz_explicit", "hpz_recompute"])
def test_hpz_in_two_groups_equals_plain_adamw(hpz_runs, reference, scenario):
    _assert_close(hpz_runs[scenario]["state"], reference[3], FP32_TOL)


@pytest.mark.parametrize("world", [2, 3])
@pytest.mark.parametrize("scenario", ["frozen", "frozen_explicit"])
def test_frozen_parameters_equal_plain_adamw_on_the_rest(runs, reference, world, scenario):
    _assert_close(runs[world][scenario]["state"], reference["frozen"], FP32_TOL)
    assert runs[world][scenario]["grad_norm"] == pytest.approx(reference["frozen_norm"], rel=1e-5)


@pytest.mark.parametrize("world", [2, 3])
def test_grad_norm_is_the_global_norm(runs, reference, world):
    assert reference["norm"] > T.CLIP  # clipping was active in the last step
    for scenario in ("default", "explicit", "persistent", "meta"):
        assert runs[world][scenario]["grad_norm"] == pytest.approx(reference["norm"], rel=1e-5)


@pytest.mark.parametrize("world", [2, 3])
@pytest.mark.parametrize("scenario", ["bf16", "split"])
def test_bf16_matches_fsdp2_and_tracks_fp32(runs, reference, world, scenario):
    ours = runs[world][scenario]["state"]
    _assert_close(ours, runs[world]["fsdp2_bf16"]["state"], 1e-6)
    fp32 = runs[world]["default"]["losses"]
    bf16 = runs[world][scenario]["losses"]
    assert all(abs(a - b) <= 0.05 * abs(a) for a, b in zip(fp32, bf16))


@pytest.mark.parametrize("world", [2, 3])
@pytest.mark.parametrize("name", ["adamw", "offload", "offload_param", "sgd"])
def test_checkpoint_then_continue_equals_uninterrupted(runs, reference, world, name):
    continued = runs[world][f"continued_{name}"]
    assert continued["steps"] == 4
    _assert_close(continued["state"], reference["sgd4" if name == "sgd" else 4], FP32_TOL)


@pytest.mark.parametrize("name", ["adamw", "offload", "offload_param", "sgd"])
def test_resume_on_another_world_size(runs, reference, name):
    resumed = runs[3][f"resumed_{name}"]
    assert resumed["steps_at_load"] == 2 and resumed["steps"] == 4
    _assert_close(resumed["state"], reference["sgd4" if name == "sgd" else 4], FP32_TOL)


def test_split_master_checkpoint_loads_as_fp32_on_another_world_size(runs):
    _assert_close(runs[3]["split_loaded"]["state"], runs[2]["split_saved"]["state"], 0.0)
