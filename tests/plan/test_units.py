"""Units from the module tree: the repeated blocks of any container, one rule for planner and runtime."""

from __future__ import annotations

import copy
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


class _Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)

    def forward(self, x):
        return x + self.b(torch.tanh(self.a(x)))


class _SharedBlocks(torch.nn.Module):
    """Block 1's weights are block 0's (a universal-transformer style tie); its biases are tiny."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(16, 8)
        self.layers = torch.nn.ModuleList([_Block(), _Block()])
        self.layers[1].a.weight, self.layers[1].b.weight = self.layers[0].a.weight, self.layers[0].b.weight

    def forward(self, ids):
        h = self.emb(ids)
        for layer in self.layers:
            h = layer(h)
        return h.square().mean()


def test_a_block_of_tied_weights_gets_a_unit_of_externals_in_both_plans():
    # With the biases persistent, block 1 gathers nothing of its own: it reads block 0's weights,
    # so its unit keeps block 0 gathered while it runs (not the root for the whole forward).
    config = {**NO_PERSISTENCE, "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 8}}
    plan = default_plan(_SharedBlocks(), config)
    assert plan.unit("layers.1").params == () and plan.unit("layers.1").external == ("layers.0.a.weight",
                                                                                      "layers.0.b.weight")
    assert plan.unit("").external == ()
    model = build_meta_model(_SharedBlocks, Target("shared.py", "build", "--model"))
    inputs = (lambda batch, seq, gen: (torch.randint(0, 16, (batch, seq), generator=gen),), Target("shared.py", "inputs",
                                                                                                  "--inputs"))
    planned = build_plan(model, trace_model(model, root=REPO, batch_size=2, seq_len=4, inputs=inputs),
                         ZeroSpec(stage=3, param_persistence_threshold=8))
    assert {u.module: (u.params, u.external) for u in planned.units} == \
        {u.module: (u.params, u.external) for u in plan.units}

    # The default plan trains it as plain AdamW does.
    torch.manual_seed(0)
    reference = _SharedBlocks()
    engine = zr.initialize(copy.deepcopy(reference), config, device="cpu")
    assert engine.plan.unit("layers.1").external == plan.unit("layers.1").external
    c = engine.config
    opt = torch.optim.AdamW(reference.parameters(), lr=c.lr, betas=c.betas, eps=c.eps, weight_decay=c.weight_decay)
    for step in range(3):
        ids = torch.randint(0, 16, (1, 4), generator=torch.Generator().manual_seed(step))
        loss = engine(ids)
        engine.backward(loss)
        engine.step()
        reference(ids).backward()
        torch.nn.utils.clip_grad_norm_(reference.parameters(), c.gradient_clipping)
        opt.step()
        opt.zero_grad()
    trained = engine.full_state_dict()
    for name, value in reference.state_dict().items():
        torch.testing.assert_close(trained[name], value, rtol=0, atol=1e-6)
