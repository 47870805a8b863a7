"""`zgen plan --auto`: the search, its memory and step model against GPU measurements, the CLI and `emit --auto`."""

from __future__ import annotations

import json
import shlex
from dataclasses import replace
import sys
from pathlib import Path

import pytest

from zgen.config.resolved import ZeroSpec
from zgen.errors import ZgenError
from zgen.plan import auto
from zgen.plan import trace as tr
from zgen.plan.planner import build_plan, unit_numel
from zgen.plan.target import Target
from zgen.schedule.plan import Plan
from zgen.steptime import H200, Work, step_time

REPO = Path(__file__).resolve().parents[2]
GiB = 2**30
sys.path.insert(0, str(REPO / "examples/llama"))
import model as llama  # noqa: E402

SHAPES = {"1b": {}, "3b": {"hidden_size": 3072, "num_hidden_layers": 28, "num_attention_heads": 24}}


class _Traced(dict):
    """The Llama shapes traced on meta at seq 8192 (bf16), with their default plans and fusable heads; on first use."""

    def __missing__(self, name):
        dims = SHAPES[name]
        model = tr.build_meta_model(lambda: llama.build_model(llama.LlamaConfig(**dims)),
                                    Target("examples/llama/model.py", "build_model", "--model"))
        trace = tr.trace_model(model, root=REPO, batch_size=1, seq_len=8192, dtype="bfloat16")
        plan = build_plan(model, trace, ZeroSpec(stage=3, param_persistence_threshold=100_000), world_size=1)
        self[name] = (model, trace, plan, tr.fused_heads(model, trace))
        return self[name]


@pytest.fixture(scope="module")
def traced():
    return _Traced()


def _search(traced, shape="1b", budget=80 * GiB, batch=2, compiled=True, heads=None, clipping=False):
    model, trace, plan, found = traced[shape]
    sizes = {p.name: p.numel for p in trace.params}
    return auto.search(plan, trace.costs, unit_numel(plan, trace), trace_batch=1, params=trace.total_params,
                       persistent=sum(sizes[p] for p in plan.persistent), train_batch_size=batch, world_size=1,
                       seq_len=8192, precision="bf16", adam=True, budget=budget,
                       heads=found if heads is None else heads, compiled=compiled,
                       vocab_hidden=(model.config.vocab_size, model.config.hidden_size), clipping=clipping)


def _setting(result, mb, recompute, fused=False):
    return next(s for s in result.scored if s.candidate.micro_batch == mb and len(s.candidate.recompute) == recompute
                and bool(s.candidate.head_loss) == fused and not s.candidate.offload_optimizer)


# bench/NOTES.md: one H200, Llama shapes at seq 8192, micro batch 1, no accumulation, the model's own loss:
# (shape, units recomputed, compiled, measured peak GiB, measured step ms, run).
MEASURED = [
    ("1b", 0, True, 35.01, 161.2, "run 7"),
    ("1b", 0, False, 39.01, 194.5, "run 7"),
    ("1b", 16, True, 26.24, 198.4, "run 8"),
    ("1b", 16, False, 26.24, 236.7, "run 8"),
    ("3b", 0, True, 67.18, 377.5, "run 9"),
    ("3b", 0, False, 75.93, 452.6, "run 9"),
]


@pytest.mark.slow  # traces the 3B shape too
@pytest.mark.parametrize("shape, recompute, compiled, peak, step, run", MEASURED)
def test_predictions_hold_against_the_gpu_measurements(traced, shape, recompute, compiled, peak, step, run):
    s = _setting(_search(traced, shape, 139 * GiB, batch=1, compiled=compiled, heads=()), 1, recompute)
    assert s.peak.total / GiB == pytest.approx(peak, rel=0.10), run
    assert s.step.total * 1e3 == pytest.approx(step, rel=0.15), run


# bench/NOTES.md, issue 21 run b: one H200, 1B shape at seq 8192, 4 sequences per step, the runtime's fused loss, no
# recomputation (micro batch, measured peak allocated GiB, measured step ms).
MEASURED_FUSED = [(1, 31.42, 609.1), (2, 40.93, 580.6), (4, 55.30, 576.1)]


@pytest.mark.parametrize("mb, peak, step", MEASURED_FUSED)
def test_fused_loss_predictions_hold_against_issue_21_run_b(traced, mb, peak, step):
    s = _setting(_search(traced, "1b", 139 * GiB, batch=4), mb, 0, fused=True)
    assert s.peak.total / GiB == pytest.approx(peak, rel=0.10)
    assert s.step.total * 1e3 == pytest.approx(step, rel=0.15)


def test_the_probe_finds_the_llama_head_and_the_fused_loss_frees_the_logits(traced):
    assert traced["1b"][3] == ("lm_head",)
    r = _search(traced)
    plain, fused = _setting(r, 2, 0), _setting(r, 2, 0, fused=True)
    assert plain.peak.total - fused.peak.total > 15 * GiB  # 2 x 8191 x 128256 logits at 12 bytes, less the chunks
    assert fused.step.total < plain.step.total


@pytest.mark.parametrize("budget, want", [
    (80 * GiB, "mb 2 x1, no recompute, fused loss"),
    (30 * GiB, ", recompute "),  # some blocks recomputed, not all
    (16 * GiB, "offload"),
])
def test_smaller_budgets_buy_memory_with_time(traced, budget, want):
    r = _search(traced, budget=budget)
    best = r.best
    assert want in best.candidate.describe(r.blocks)
    assert best.peak.total <= budget * (1 - r.margin)
    assert all(s.step.total >= best.step.total for s in r.scored if s.fits)
    lines = "\n".join(auto.lines(r))
    assert "chosen: " in lines and "why the others lose:" in lines


def test_the_chosen_plan_carries_recomputation_fused_loss_and_the_setting(traced):
    r = _search(traced, budget=30 * GiB)
    plan = auto.apply(traced["1b"][2], r)
    again = Plan.from_json(plan.to_json())
    assert again == plan and again.head_loss == "lm_head"
    recomputed = [u.module for u in again.units if u.recompute]
    # as few decoder blocks as fit (the first block also keeps the rotary tables, so it saves less)
    assert set(recomputed) == set(r.best.candidate.recompute) and 0 < len(recomputed) < 16
    assert all(m.startswith("layers.") for m in recomputed)
    assert again.setting == auto.summary(r.best, r) and ", recompute " in again.setting


def test_bad_budgets_say_what_would_do(traced):
    with pytest.raises(ZgenError, match=r"no setting fits in 4.00 GiB per GPU: the smallest peak is") as e:
        _search(traced, budget=4 * GiB)
    need = float(e.value.help.split("--gpu-mem ")[1].split("GiB ")[0])  # typed as one argument
    assert _search(traced, budget=int(need * GiB) + GiB).best  # the budget it names does fit
    with pytest.raises(ZgenError, match=r"is more than the H200's 140.40 GiB"):
        _search(traced, budget=200 * GiB)


def _shared(copy_bytes: float, params: int) -> float:
    """How much longer the host update takes while copies of `copy_bytes` share the host's memory bandwidth."""
    return 1 + copy_bytes / (params * H200.host_update_bytes)


def test_host_update_shares_host_memory_bandwidth_with_the_copies():
    """Parameter offload's gathers read pinned host memory while the update runs: the update's stage stretches."""
    base = dict(gemm_flops=1e12, attention_flops=2e11, recompute_gemm_flops=0, recompute_attention_flops=0,
                eager_pointwise_bytes=1e8, compiled_pointwise_bytes=4e8, recompute_pointwise_bytes=0,
                recompute_compiled=True, logits=1e8, fused_loss=False, micro_steps=2, params=10**10,
                offload_optimizer=True, grad_copy_bytes=4e10, largest_unit=0.0)
    alone = step_time(Work(**base), H200)
    gathers = step_time(Work(**{**base, "param_copy_bytes": 2e10}), H200)  # per micro-step, two micro-steps
    host = 10**10 / H200.host_update_params
    compute = (alone.matmul + alone.attention + alone.elementwise + alone.loss) / 2  # one micro-step's
    # the gathers themselves show where they outlast compute; the host stage, the step's longest, stretches by
    # their 4e10 bytes over the update's own
    gather_exposed = 2 * (2e10 / H200.h2d_bytes - compute)
    stretch = host * (_shared(8e10, 10**10) - _shared(4e10, 10**10))
    assert gathers.exposed - alone.exposed == pytest.approx(gather_exposed + stretch)
    assert stretch == pytest.approx(host * 4e10 / (10**10 * H200.host_update_bytes))


def test_step_time_adds_what_each_choice_costs():
    base = dict(gemm_flops=1e14, attention_flops=2e13, recompute_gemm_flops=0, recompute_attention_flops=0,
                eager_pointwise_bytes=1e9, compiled_pointwise_bytes=4e10, recompute_pointwise_bytes=0,
                recompute_compiled=True, logits=1e9, fused_loss=False, micro_steps=1, params=10**9)
    plain = step_time(Work(**base), H200)
    assert plain.total == pytest.approx(plain.matmul + plain.attention + plain.elementwise + plain.loss + plain.optimizer)
    recomputed = step_time(Work(**{**base, "recompute_gemm_flops": 5e13, "recompute_attention_flops": 1e13}), H200)
    fused = step_time(Work(**{**base, "fused_loss": True}), H200)
    offload = step_time(Work(**{**base, "offload_optimizer": True, "grad_copy_bytes": 4e9, "weight_copy_bytes": 2e9,
                                "largest_unit": 0.25}), H200)
    assert recomputed.total > plain.total > fused.total
    # the copy down, the host's update and the copy up overlap unit by unit: the slowest over the whole shard, the
    # other two for the largest unit (a quarter of it here)
    stages = [4e9 / H200.d2h_bytes, _shared(6e9, 10**9) * 10**9 / H200.host_update_params, 2e9 / H200.h2d_bytes]
    assert offload.optimizer == 0 and offload.exposed == pytest.approx(
        max(stages) + 0.25 * (sum(stages) - max(stages)) - plain.forward)


def test_offloaded_updates_started_in_backward_hide_behind_the_rest_of_it():
    base = dict(gemm_flops=1e14, attention_flops=2e13, recompute_gemm_flops=0, recompute_attention_flops=0,
                eager_pointwise_bytes=1e9, compiled_pointwise_bytes=4e10, recompute_pointwise_bytes=0,
                recompute_compiled=True, logits=1e9, fused_loss=False, micro_steps=1, params=10**10,
                offload_optimizer=True, grad_copy_bytes=4e10, weight_copy_bytes=2e10, largest_unit=0.25)
    late = step_time(Work(**base), H200)
    early = step_time(Work(**{**base, "early_update": True, "first_grad": 0.2, "last_grad": 0.1}), H200)
    compute = late.matmul + late.attention + late.elementwise + late.loss
    backward = compute - late.forward
    # the pipeline starts a fifth into the backward and runs under the rest of it
    assert early.exposed == pytest.approx(late.exposed - 0.8 * backward)
    assert late.total - early.total == pytest.approx(0.8 * backward)
    # never below the pipeline of what only the backward's end makes final (the root's parameters here: all of them)
    stages = [4e10 / H200.d2h_bytes, _shared(6e10, 10**10) * 10**10 / H200.host_update_params, 2e10 / H200.h2d_bytes]
    tail = step_time(Work(**{**base, "early_update": True, "first_grad": 0.2, "last_grad": 1.0}), H200)
    assert tail.exposed == pytest.approx(sum(stages))
    # with nothing of the backward before the first final gradient and nothing left at its end: today's pipeline
    assert step_time(Work(**{**base, "early_update": True, "first_grad": 1.0}), H200).exposed == pytest.approx(late.exposed)


def test_the_search_predicts_offload_steps_without_clipping_shorter_by_the_backward_they_hide_behind(traced):
    clipped = {s.candidate: s for s in _search(traced, budget=80 * GiB, clipping=True).scored}
    free = {s.candidate: s for s in _search(traced, budget=80 * GiB).scored}
    assert clipped.keys() == free.keys()
    for c, s in free.items():
        late = clipped[c].step
        if not c.offload_optimizer:
            assert s.step == late
            continue
        compute = late.matmul + late.attention + late.elementwise + late.loss
        gain = late.total - s.step.total
        # at most the backward of the last micro-step (compute - forward), at least nothing
        assert 0 <= gain <= (compute / c.accumulation - late.forward) + 1e-9
        assert s.peak == clipped[c].peak
    gains = [clipped[c].step.total - s.step.total for c, s in free.items() if c.offload_optimizer]
    assert max(gains) > 0.05  # the 1B's backward hides a good part of its host update


def test_at_an_equal_predicted_step_the_setting_that_offloads_less_wins():
    # A tiny model: every offload hides under the backward and the steps agree to 0.1%, inside the model's error;
    # the search then keeps the weights and the optimizer on the GPU. A faster setting still wins by its step.
    from types import SimpleNamespace as NS

    def scored(step, opt, param, recompute=(), peak=1.0):
        cand = NS(offload_optimizer=opt, offload_param=param, recompute=recompute)
        return NS(candidate=cand, step=NS(total=step), peak=NS(total=peak))

    plain, opt, both = scored(1.0012e-3, False, False), scored(1.0005e-3, True, False), scored(1.0e-3, True, True)
    assert sorted([both, opt, plain], key=auto._order) == [plain, opt, both]
    faster = scored(0.95e-3, True, True)
    assert sorted([plain, faster], key=auto._order)[0] is faster


def test_the_timeline_holds_what_the_runtime_keeps_beside_the_activations():
    """World size 1, optimizer offload, one micro-step per update: a root of 100 parameters and two blocks of 1000.

    The runtime (zgen.runtime.group) keeps last step's fp32 gradient shards until each unit's next forward, a unit's
    bf16 gradients from autograd until its fold has read them and the previous unit's until the next fold, and
    allocates the fp32 shard at the fold.
    """
    from zgen.memory import Setting, UnitMemory, setting_timeline
    from zgen.schedule.plan import Unit

    plan = Plan(units=(Unit(module="", params=("r",)), Unit(module="a", params=("a",)), Unit(module="b", params=("b",))),
                forward_order=("", "a", "b"), backward_order=("", "b", "a"))
    units = {"": UnitMemory("", 100, 0), "a": UnitMemory("a", 1000, 500), "b": UnitMemory("b", 1000, 500)}
    setting = Setting(world_size=1, precision="bf16", accumulation=1, split_master=False, offload_optimizer=True)
    points = {p.label: p.total - 2 * 2100 for p in setting_timeline(plan, units, 2100, 0, setting)}  # less the bf16 weights
    assert points["fwd 0"] == 8000  # both blocks' fp32 shards from the last step
    assert points["fwd 1"] == 4000 + 500  # a's dropped as a runs
    assert points["fwd 2"] == points["loss"] == 1000
    assert points["bwd 1"] == 500 + 2000 + 4000  # b's fold: a's activations, b's bf16 gradients, b's new shard
    assert points["bwd 2"] == 4000 + 2000 + 2000 + 4000  # a's fold: b's shard, both blocks' bf16 gradients, a's shard
    assert points["bwd root"] == 8000 + 200 + 2000 + 400
    assert points["step"] == 8400
    # with accumulation the window's shards are whole all through the last micro-step: nothing is allocated at a fold
    window = {p.label: p.total - 2 * 2100 for p in setting_timeline(plan, units, 2100, 0, replace(setting, accumulation=2))}
    assert window["fwd 0"] == 8400 and window["bwd 2"] == 8400 + 500 + 2000 + 2000  # during a's backward


# -- the command line ---------------------------------------------------------------------------------------

TINY = ["--model", f"{REPO}/examples/llama/model.py:build_tiny_model", "--seq-len", "128", "--world-size", "1"]


@pytest.fixture
def config(tmp_path: Path) -> str:
    cfg = json.loads((REPO / "examples/llama/ds_config.json").read_text())
    cfg["zero_optimization"]["stage3_param_persistence_threshold"] = 0
    (tmp_path / "ds.json").write_text(json.dumps(cfg))
    return "ds.json"


def test_plan_auto_prints_the_table_and_its_json_applies_the_choice(zgen, tmp_path, config):
    code, out, err = zgen("plan", *TINY, "--config", config, "--gpu-mem", "8GiB", "--auto", cwd=tmp_path)
    assert code == 0, err
    assert "auto: " in out and "chosen: mb 2 x1, no recompute, fused loss" in out and "fits: the chosen" in out
    code, out, _ = zgen("plan", *TINY, "--config", config, "--gpu-mem", "8GiB", "--auto", "--json", cwd=tmp_path)
    plan = Plan.from_json(out)
    assert code == 0 and plan.head_loss == "lm_head" and plan.setting.startswith("mb 2 x1, ")


@pytest.mark.parametrize("flags, message", [
    (["--gpu-mem", "1MiB", "--auto"], "no setting fits in 1.0 MiB per GPU"),
    (["--gpu-mem", "1TiB", "--auto"], "is more than the H200's"),
    (["--auto"], "--auto needs the memory budget per GPU"),
])
def test_plan_auto_bad_budgets_are_one_line(zgen, tmp_path, config, flags, message):
    code, out, err = zgen("plan", *TINY, "--config", config, *flags, cwd=tmp_path)
    assert code == 2 and message in err and "Traceback" not in err


@pytest.mark.slow  # two emits of the tiny model, about 10 s
def test_emit_auto_writes_the_choice_into_the_script_and_its_plan(zgen, tmp_path, config):
    (tmp_path / "pyproject.toml").write_text("[tool.zgen]\nauto = true\n")
    code, out, err = zgen("emit", *TINY, "--config", config, "--gpu-mem", "8GiB", "--out", "train.py", cwd=tmp_path)
    assert code == 0, err
    assert "auto: mb 2 x1, no recompute, fused loss: predicted" in out
    script = (tmp_path / "train.py").read_text()
    assert "#   auto:    mb 2 x1, no recompute, fused loss: predicted" in script
    # the banner's own command, as a user copies it, says the file is current
    check_line = next(ln for ln in script.splitlines() if ln.startswith("# Check it is current: zgen emit "))
    banner_args = shlex.split(check_line.split("zgen emit ", 1)[1])
    assert "8GiB" in banner_args
    code, _, err = zgen("emit", *banner_args, cwd=tmp_path)
    assert code == 0, err
    assert "micro_batch_size = 2  #" in script and "zgen plan --auto" in script
    plan = Plan.from_json((tmp_path / "train.plan.json").read_text())
    assert plan.head_loss == "lm_head"
    assert zgen("emit", "--check", *TINY, "--config", config, "--gpu-mem", "8GiB", "--out", "train.py",
                cwd=tmp_path)[0] == 0


def test_partial_offload_fills_the_room_the_whole_offload_leaves_and_the_runtime_keeps_the_same_units(traced):
    from zgen.zero_policy import optimizer_on_device

    r = _search(traced, budget=16 * GiB)
    model, trace, plan, _ = traced["1b"]
    sizes = {p.name: p.numel for p in trace.params}
    numel = unit_numel(plan, trace)
    stepped = [("<persistent>", sum(sizes[p] for p in plan.persistent))] + [
        (m, numel[m]) for m in dict.fromkeys(plan.forward_order) if m in numel]
    limit = r.budget * (1 - r.margin)
    partial = [s for s in r.scored if s.candidate.kept_units]
    assert partial
    for s in partial:
        c = s.candidate
        whole = next(x for x in r.scored if x.candidate == replace(c, kept_units=0, kept_params=0, offload_ratio=1.0))
        # 12 bytes (fp32 master, two moments) per kept parameter at every point; within the budget
        assert s.peak.total == pytest.approx(whole.peak.total + 12 * c.kept_params)
        assert s.fits and s.peak.total <= limit
        assert s.step.total < whole.step.total  # less of the update on the host
        kept = optimizer_on_device(stepped, c.offload_ratio)  # what the runtime keeps under that ratio
        assert len(kept) == c.kept_units and sum(n for m, n in stepped if m in kept) == c.kept_params
    assert "units' optimizer on the GPU" in "\n".join(auto.lines(r))
