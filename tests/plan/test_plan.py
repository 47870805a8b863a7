"""The planner draws, for each example model, the plan a person would draw by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from zgen.config.resolved import ZeroSpec
from zgen.errors import ZgenError
from zgen.plan.planner import build_plan, crosscheck_notes, resolved_hazards
from zgen.schedule.replay import simulate
from zgen.schedule.plan import Plan
from zgen.plan.trace import build_meta_model, load_callable, parse_target, trace_model
from zgen.findings import Finding

REPO = Path(__file__).resolve().parents[2]
# Small thresholds so the tiny example models have both persistent and unit parameters.
ZERO = ZeroSpec(stage=3, param_persistence_threshold=100, prefetch_bucket_size=10**9,
                max_live_parameters=10**9, max_reuse_distance=0)


def plan_for(spec: str, zero: ZeroSpec = ZERO, patterns=()):
    t = parse_target(spec, "--model")
    model = build_meta_model(load_callable(t, REPO), t)
    tr = trace_model(model, root=REPO, batch_size=1, seq_len=8)
    return model, tr, build_plan(model, tr, zero, patterns=patterns)


def units(plan: Plan) -> dict[str, tuple[str, ...]]:
    return {u.module: u.params for u in plan.units}


def test_tied_weights_live_once_in_the_root_unit():
    _, _, plan = plan_for("examples/models/tied.py:build_model")
    assert units(plan) == {
        "blocks.0": ("blocks.0.fc_in.weight", "blocks.0.fc_in.bias", "blocks.0.fc_out.weight"),
        "blocks.1": ("blocks.1.fc_in.weight", "blocks.1.fc_in.bias", "blocks.1.fc_out.weight"),
        "blocks.2": ("blocks.2.fc_in.weight", "blocks.2.fc_in.bias", "blocks.2.fc_out.weight"),
        "": ("embed.weight",),  # `head.weight` is the same tensor: not listed twice, not external
    }
    assert all(u.external == () for u in plan.units)
    assert plan.forward_order == ("", "blocks.0", "blocks.1", "blocks.2")
    assert plan.backward_order == ("", "blocks.2", "blocks.1", "blocks.0")
    # 32-element norms and fc_out biases stay gathered; fc_in biases (128) are above the threshold of 100.
    assert set(plan.persistent) == {f"blocks.{i}.{n}" for i in range(3) for n in
                                    ("norm.weight", "norm.bias", "fc_out.bias")} | {"norm.weight", "norm.bias"}


def test_encoder_decoder_gets_units_for_both_stacks_in_run_order():
    _, _, plan = plan_for("examples/models/encdec.py:build_model")
    enc, dec = ["encoder.layers.0", "encoder.layers.1"], ["decoder.layers.0", "decoder.layers.1"]
    assert plan.forward_order == ("", *enc, *dec)
    assert plan.backward_order == ("", *reversed(dec), *reversed(enc))
    root = units(plan)[""]
    assert "shared.weight" in root and "lm_head.weight" in root
    assert not any(p.startswith(("encoder.layers", "decoder.layers")) for p in root)
    assert all(p.startswith("decoder.layers.1.") for p in units(plan)["decoder.layers.1"])
    assert all(u.external == () for u in plan.units)  # MultiheadAttention reads its own out_proj: same unit


def test_moe_block_unit_holds_every_expert():
    _, _, plan = plan_for("examples/models/moe.py:build_model")
    assert set(units(plan)) == {"blocks.0", "blocks.1", ""}
    for b in ("blocks.0", "blocks.1"):
        expected = {f"{b}.experts.{e}.{w}.weight" for e in range(4) for w in ("up", "down")}
        assert set(units(plan)[b]) == expected
        assert f"{b}.router.weight" in plan.persistent  # 64 elements, below the threshold of 100
    assert plan.forward_order == ("", "blocks.0", "blocks.1")


def test_forward_reading_a_childs_weight():
    _, tr, plan = plan_for("examples/models/child_weight.py:build_model")
    ext = {u.module: u.external for u in plan.units}
    assert ext == {"blocks.0": (), "blocks.1": (), "blocks.2": (), "": ("blocks.0.proj.weight",)}
    # The root runs for the whole forward and reads block 0's weight at its end: block 0 stays gathered from
    # its own call until its backward; block 1 (max reuse distance 0) is released after its call.
    assert {u.module: u.reshard_after_forward for u in plan.units}["blocks.0"] is False
    assert any("unit `blocks.0` stays gathered" in n for n in plan.notes)
    fwd = simulate(plan, phase="forward")
    assert [("blocks.0" in s.gathered) for s in fwd] == [True, True, True, True]
    assert fwd[1].freed == () and "blocks.1" in fwd[2].freed
    assert "blocks.0" in simulate(plan, phase="backward")[0].gathered
    # With a static ZG301 at the root's read, the plan resolves it; the block's read of its own child is harmless.
    src = "examples/models/child_weight.py"
    line = next(i for i, t in enumerate((REPO / src).read_text().splitlines(), 1) if "x = F.linear(x, self.blocks" in t)
    static = [Finding(code="ZG301", message="reads `self.blocks[0].proj.weight`", path=src, line=line, column=9,
                      end_line=line, end_column=50)]
    lines, keys = resolved_hazards(tr, plan, static, REPO)
    assert keys == {(src, line, "ZG301")} and "unit `<root>`" in lines[0]
    notes = crosscheck_notes(tr, plan, static, REPO)
    assert any(n.startswith(f"{src}:{line}: agree: ZG301") for n in notes)
    assert any("trace only" in n and "blocks.0.proj.weight" in n and "harmless" in n for n in notes)


def test_plan_of_llama_has_the_default_grouping():
    from zgen.schedule.grouping import group, param_infos
    from zgen.schedule.units import block_modules

    model, _, plan = plan_for("examples/llama/model.py:build_tiny_model", ZeroSpec(stage=3, param_persistence_threshold=0))
    assert units(plan) == {u.module: u.params for u in group(param_infos(model), block_modules(model), 0).units}
    assert len(plan.units) > 2 and all(u.params for u in plan.units)


@pytest.mark.parametrize(
    "bucket, live, expected",
    [
        (1, 10**9, [("blocks.0",), ("blocks.1",), ("blocks.2",), ()]),  # a unit larger than the bucket goes alone
        (10**9, 10**9, [("blocks.0", "blocks.1", "blocks.2"), (), (), ()]),
        (0, 10**9, [(), (), (), ()]),  # bucket 0: prefetch off
    ],
)
def test_prefetch_respects_bucket_size(bucket, live, expected):
    zero = ZeroSpec(stage=3, param_persistence_threshold=100, prefetch_bucket_size=bucket,
                    max_live_parameters=live, max_reuse_distance=0)
    _, _, plan = plan_for("examples/models/tied.py:build_model", zero)
    assert [tuple(x) for x in plan.forward_prefetch] == expected


def test_max_live_parameters_bounds_prefetch_and_kept_units():
    # root 4,096 elements, each block 8,320: max live 12,416 fits the root and one block, nothing more.
    # Keeping the last block costs nothing (backward starts with it); keeping another would hold two blocks.
    zero = ZeroSpec(stage=3, param_persistence_threshold=100, prefetch_bucket_size=10**9,
                    max_live_parameters=4096 + 8320, max_reuse_distance=10**9)
    _, tr, plan = plan_for("examples/models/tied.py:build_model", zero)
    sizes = {p.name: p.numel for p in tr.params}
    numel = {u.module: sum(sizes[p] for p in u.params) for u in plan.units}
    assert numel == {"": 4096, "blocks.0": 8320, "blocks.1": 8320, "blocks.2": 8320}
    peak = max(sum(numel[m] for m in s.gathered) for s in simulate(plan))
    assert peak <= zero.max_live_parameters
    assert {u.module for u in plan.units if not u.reshard_after_forward} == {"", "blocks.2"}
    # Only at the root's start is there room to prefetch; later blocks are gathered on demand.
    assert [tuple(x) for x in plan.forward_prefetch] == [("blocks.0",), (), (), ()]


def test_reuse_distance_keeps_the_last_block_gathered_for_backward():
    # Between the end of block 2's forward and its backward only the root (4,096) is traversed.
    zero = ZeroSpec(stage=3, param_persistence_threshold=100, prefetch_bucket_size=10**9,
                    max_live_parameters=10**9, max_reuse_distance=5000)
    _, _, plan = plan_for("examples/models/tied.py:build_model", zero)
    kept = {u.module for u in plan.units if not u.reshard_after_forward}
    assert kept == {"", "blocks.2"}
    bwd = simulate(plan, phase="backward")
    assert "blocks.2" in bwd[0].gathered and "blocks.2" not in bwd[0].on_demand + bwd[0].issued


def test_unit_patterns_and_their_errors():
    _, _, plan = plan_for("examples/llama/model.py:build_tiny_model", ZeroSpec(stage=3, param_persistence_threshold=0),
                          patterns=("layers.*.mlp", "layers.*.self_attn"))
    assert plan.forward_order[:3] == ("", "layers.0.self_attn", "layers.0.mlp")
    with pytest.raises(ZgenError, match="`units` pattern `blocks.*` matches no module"):
        plan_for("examples/llama/model.py:build_tiny_model", patterns=("blocks.*",))


def test_plan_round_trips_through_json():
    _, _, plan = plan_for("examples/models/child_weight.py:build_model")
    assert Plan.from_json(plan.to_json()) == plan


def test_weight_tied_across_units_is_external_to_the_second_unit(tmp_path):
    (tmp_path / "shared.py").write_text(
        "import torch.nn.functional as F\n"
        "from torch import nn\n\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.embed = nn.Embedding(32, 16)\n"
        "        self.blocks = nn.ModuleList(nn.Linear(16, 16, bias=False) for _ in range(3))\n"
        "        self.blocks[2].weight = self.blocks[0].weight  # ALBERT-style sharing across depth\n\n"
        "    def forward(self, input_ids, labels):\n"
        "        x = self.embed(input_ids)\n"
        "        for b in self.blocks:\n"
        "            x = b(x)\n"
        "        return F.cross_entropy(x.flatten(0, 1), labels.flatten() % 16)\n\n"
        "def build():\n"
        "    return Net()\n"
    )
    t = parse_target("shared.py:build", "--model")
    model = build_meta_model(load_callable(t, tmp_path), t)
    tr = trace_model(model, root=tmp_path, batch_size=1, seq_len=4)
    plan = build_plan(model, tr, ZeroSpec(stage=3, param_persistence_threshold=0))
    assert units(plan) == {"blocks.0": ("blocks.0.weight",), "blocks.1": ("blocks.1.weight",), "blocks.2": (),
                           "": ("embed.weight",)}
    # blocks.2 owns nothing of its own but runs with block 0's weight: a unit whose only parameter is external.
    assert plan.unit("blocks.2").external == ("blocks.0.weight",) and plan.unit("blocks.2").params == ()
    assert plan.forward_order == ("", "blocks.0", "blocks.1", "blocks.2")
