"""Units from the module tree: the repeated blocks of any container, one rule for planner and runtime."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import zgen.runtime as zr
from zgen.config.resolved import ZeroSpec
from zgen.errors import ZgenError
from zgen.plan.planner import build_plan
from zgen.plan.trace import Target, build_meta_model, load_callable, parse_target, trace_model
from zgen.schedule.units import block_modules, match_units, stacks
from zgen.runtime.plans import default_plan

REPO = Path(__file__).resolve().parents[2]
NO_PERSISTENCE = {"train_batch_size": 1, "train_micro_batch_size_per_gpu": 1,
                  "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}},
                  "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0}}


def _model(example: str):
    t = parse_target(f"examples/models/{example}.py:build_model", "--model")
    return build_meta_model(load_callable(t, REPO), t)


def _inputs(example: str):
    t = parse_target(f"examples/models/{example}.py:make_inputs", "--inputs")
    return load_callable(t, REPO), t


@pytest.mark.parametrize(
    "example, expected_stacks, expected_blocks",
    [
        ("patch_vit", ["blocks"], ["blocks.0", "blocks.1", "blocks.2"]),  # nn.Sequential blocks
        ("nested_layers", ["layers"], [f"layers.{i}.{j}" for i in range(4) for j in range(2)]),  # inner lists flattened
        ("two_tower", ["text.blocks", "image.blocks"],
         ["text.blocks.0", "text.blocks.1", "image.blocks.0", "image.blocks.1"]),  # two stacks, two containers
        ("encdec", ["encoder.layers", "decoder.layers"],
         ["encoder.layers.0", "encoder.layers.1", "decoder.layers.0", "decoder.layers.1"]),
    ],
)
def test_stacks_and_blocks_of_any_container(example, expected_stacks, expected_blocks):
    model = _model(example)
    assert stacks(model) == expected_stacks
    assert block_modules(model) == expected_blocks


def _planned_units(model, inputs=None, loss=None) -> set[str]:
    trace = trace_model(model, root=REPO, batch_size=2, seq_len=8, inputs=inputs, loss=loss)
    plan = build_plan(model, trace, ZeroSpec(stage=3, param_persistence_threshold=0))
    return {u.module for u in plan.units}


def test_planner_and_runtime_default_plan_agree():
    for example, inputs, loss in [("patch_vit", True, "cross_entropy"), ("nested_layers", False, None),
                                  ("two_tower", True, "clip_loss"), ("encdec", False, None)]:
        model = _model(example)
        lt = parse_target(f"examples/models/{example}.py:{loss}", "--loss") if loss else None
        planned = _planned_units(model, _inputs(example) if inputs else None,
                                 (load_callable(lt, REPO), lt) if lt else None)
        runtime = {u.module for u in default_plan(model, NO_PERSISTENCE).units}
        assert planned == runtime, example


def test_transformers_encoder_decoder_and_two_tower_agree():
    transformers = pytest.importorskip("transformers")
    t5 = lambda: transformers.T5ForConditionalGeneration(transformers.T5Config(  # noqa: E731
        vocab_size=64, d_model=16, d_kv=8, d_ff=24, num_layers=2, num_decoder_layers=3, num_heads=2,
        decoder_start_token_id=0))
    model = build_meta_model(t5, Target("t5.py", "t5", "--model"))
    planned = _planned_units(model)
    assert {f"encoder.block.{i}" for i in range(2)} | {f"decoder.block.{i}" for i in range(3)} <= planned
    assert planned == {u.module for u in default_plan(model, NO_PERSISTENCE).units}


def test_nested_lists_train_with_the_runtime_default_plan():
    t = parse_target("examples/models/nested_layers.py:build_model", "--model")
    torch.manual_seed(0)
    engine = zr.initialize(load_callable(t, REPO), NO_PERSISTENCE, device="cpu")
    assert {u.module for u in engine.plan.units} >= {"layers.0.1", "layers.1.1"}
    ids = torch.randint(0, 64, (1, 8))
    loss = engine(input_ids=ids, labels=ids)
    engine.backward(loss)
    engine.step()
    assert torch.isfinite(loss) and engine.last_grad_norm > 0


NAMES = ["embed", "layers", "layers.0", "layers.0.attn", "layers.0.attn.q", "layers.1", "layers.1.attn",
         "layers.1.attn.q", "encoder.block.0", "encoder.block.0.layer.0", "head"]


@pytest.mark.parametrize(
    "pattern, expected",
    [
        ("layers.*", ["layers.0", "layers.1"]),  # `*` stops at a dot
        ("layers.**", ["layers.0", "layers.0.attn", "layers.0.attn.q", "layers.1", "layers.1.attn", "layers.1.attn.q"]),
        ("**.attn", ["layers.0.attn", "layers.1.attn"]),
        ("layers.*.attn", ["layers.0.attn", "layers.1.attn"]),
        ("encoder.block.*", ["encoder.block.0"]),
        ("layers.[0]", ["layers.0"]),
        ("layers.[0-1]", ["layers.0", "layers.1"]),  # a range, not the characters 0, - and 1
        ("layers.[!0]", ["layers.1"]),
        ("layers[!0]0", None),  # a negated set never matches the dot between parts
        ("head", ["head"]),
    ],
)
def test_unit_patterns(pattern, expected):
    if expected is None:
        with pytest.raises(ZgenError, match="matches no module"):
            match_units([pattern], NAMES)
    else:
        assert match_units([pattern], NAMES) == expected


def test_flag_help_examples_match_llama_blocks_only():
    t = parse_target("examples/llama/model.py:build_tiny_model", "--model")
    model = build_meta_model(load_callable(t, REPO), t)
    assert block_modules(model, ["layers.*"]) == ["layers.0", "layers.1", "layers.2"]


def test_pattern_matching_nothing_is_an_error():
    with pytest.raises(ZgenError, match=r"`units` pattern `blocks\.\*` matches no module"):
        match_units(["blocks.*"], NAMES)
