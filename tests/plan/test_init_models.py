"""Real third-party architectures come out of zgen's runtime with the weights a plain build gives them.

The oracle: `torch.manual_seed(s); factory()` on the CPU. zgen builds the same
factory with its large tensors deferred, shards it under two plans (the
default one, and one unit per module so that parents' initialisation writes
cross unit boundaries) and must produce every parameter and buffer bit for
bit. `KEEP_NUMEL = 0` defers every tensor, so every value, biases and norms
included, goes through the recorded constructor and its replay.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch

import zgen.runtime as zr
from zgen.errors import ZgenError
import zgen.runtime.meta_build as meta_build
from zgen.config.resolved import ZeroSpec
from zgen.plan.planner import build_plan
from zgen.plan.trace import Target, build_meta_model, trace_model

transformers = pytest.importorskip("transformers")

CONFIG = {
    "train_batch_size": 1,
    "train_micro_batch_size_per_gpu": 1,
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}},
    "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0},
}
VOCAB = 97


def bert():
    cfg = transformers.BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                  intermediate_size=48, max_position_embeddings=16)
    return transformers.BertForMaskedLM(cfg)


def t5():
    cfg = transformers.T5Config(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=48, num_layers=2, num_decoder_layers=2,
                                num_heads=2, decoder_start_token_id=0)
    return transformers.T5ForConditionalGeneration(cfg)


def bart():
    cfg = transformers.BartConfig(vocab_size=VOCAB, d_model=32, encoder_layers=2, decoder_layers=2,
                                  encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=48,
                                  decoder_ffn_dim=48, max_position_embeddings=32)
    return transformers.BartForConditionalGeneration(cfg)


def mixtral(experts: str | None = None):
    cfg = transformers.MixtralConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=40, num_hidden_layers=2,
                                     num_attention_heads=4, num_key_value_heads=2, num_local_experts=4,
                                     num_experts_per_tok=2, max_position_embeddings=32,
                                     **({"experts_implementation": experts} if experts else {}))
    return transformers.MixtralForCausalLM(cfg)


def vit():
    cfg = transformers.ViTConfig(image_size=16, patch_size=4, hidden_size=32, num_hidden_layers=2,
                                 num_attention_heads=2, intermediate_size=48, num_labels=5)
    return transformers.ViTForImageClassification(cfg)


def clip():
    text = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=2,
                max_position_embeddings=16, bos_token_id=1, eos_token_id=2, pad_token_id=0)
    vision = dict(image_size=16, patch_size=4, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                  num_attention_heads=2)
    return transformers.CLIPModel(transformers.CLIPConfig(text_config=text, vision_config=vision, projection_dim=16))


def _inputs(name: str):
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(3, VOCAB, (2, 8), generator=g)
    if name == "vit":
        return {"pixel_values": torch.randn(2, 3, 16, 16, generator=g), "labels": torch.tensor([1, 3])}
    if name == "clip":
        return {"input_ids": ids, "pixel_values": torch.randn(2, 3, 16, 16, generator=g), "return_loss": True}
    return {"input_ids": ids, "labels": ids}


MODELS = {"bert": bert, "t5": t5, "bart": bart, "mixtral": mixtral, "vit": vit, "clip": clip}


def _every_module_a_unit(factory, name: str):
    """A plan with one unit per module that holds parameters: every parent's write crosses a unit."""
    model = build_meta_model(factory, Target("models.py", name, "--model"))
    batch = _inputs(name)
    trace = trace_model(model, root=Path.cwd(), batch_size=2, seq_len=8,
                        inputs=(lambda b, s, g: dict(batch), Target("models.py", "inputs", "--inputs")))
    modules = [n for n, m in model.named_modules() if n and any(True for _ in m.parameters(recurse=False))]
    return build_plan(model, trace, ZeroSpec(stage=3, param_persistence_threshold=0),
                      patterns=[m.replace("[", "[[]") for m in modules])


@pytest.mark.parametrize("keep", ["all-deferred", "default"])
@pytest.mark.parametrize("name", list(MODELS))
def test_runtime_weights_equal_the_plain_cpu_build(name, keep, monkeypatch):
    factory = MODELS[name]
    if keep == "all-deferred":
        monkeypatch.setattr(meta_build, "KEEP_NUMEL", 0)
    torch.manual_seed(11)
    reference = factory()
    expected = dict(reference.named_parameters())
    plans = {"default": None, "per-module": _every_module_a_unit(factory, name)} if keep == "default" else {"default": None}
    for label, plan in plans.items():
        torch.manual_seed(11)
        engine = zr.initialize(factory, CONFIG, plan=plan, device="cpu")
        got = engine.full_state_dict()
        wrong = [k for k, v in expected.items() if not torch.equal(got[k], v.detach().float())]
        assert not wrong, f"{name} with the {label} plan: {wrong[:5]} differ"
        buffers = dict(engine.module.named_buffers())
        wrong = [k for k, b in reference.named_buffers() if not torch.equal(buffers[k], b)]
        assert not wrong, f"{name}: buffers {wrong} differ"


def test_integer_buffers_keep_their_constructor_values():
    model = build_meta_model(bert, Target("models.py", "bert", "--model"))
    ids = model.bert.embeddings.position_ids
    assert not ids.is_meta and torch.equal(ids, torch.arange(16).expand(1, -1))
    assert all(p.is_meta for p in model.parameters())


def test_parent_writes_into_a_child_unit_land(monkeypatch):
    """T5 initialises `shared` and `lm_head` from the top-level model: the last step of `model.apply`."""
    monkeypatch.setattr(meta_build, "KEEP_NUMEL", 0)
    torch.manual_seed(5)
    engine = zr.initialize(t5, CONFIG, plan=_every_module_a_unit(t5, "t5"), device="cpu")
    shared = engine.full_state_dict()["shared.weight"]
    assert torch.isfinite(shared).all() and abs(float(shared.std()) - 1.0) < 0.1  # T5: normal(0, factor * 1.0)


def test_seeded_replay_makes_the_same_distributions_and_is_reproducible(monkeypatch):
    """`init_rng="seeded"` (the GPU default) draws other numbers than the CPU build, from the same laws."""
    monkeypatch.setattr(meta_build, "KEEP_NUMEL", 0)
    torch.manual_seed(2)
    reference = bert()
    runs = []
    for _ in range(2):
        torch.manual_seed(2)
        runs.append(zr.initialize(bert, CONFIG, device="cpu", init_rng="seeded").full_state_dict())
    assert all(torch.equal(runs[0][k], runs[1][k]) for k in runs[0])
    w = "bert.encoder.layer.0.attention.self.query.weight"
    assert not torch.equal(runs[0][w], reference.state_dict()[w])
    assert abs(float(runs[0][w].std()) - float(reference.state_dict()[w].std())) < 0.005  # normal(0, 0.02)
    ln = "bert.encoder.layer.0.output.LayerNorm.weight"
    assert torch.equal(runs[0][ln], reference.state_dict()[ln])  # constant writes are the same


def test_mixtral_eager_expert_loop_traces_without_zg290():
    """The eager loop over experts indexes one stacked parameter: every rank runs the same modules."""
    model = build_meta_model(lambda: mixtral("eager"), Target("models.py", "mixtral", "--model"))
    trace = trace_model(model, root=Path.cwd(), batch_size=1, seq_len=8)
    assert any("torch.nonzero()" in d and "mlp.experts" in d for d in trace.decisions)


def test_grouped_mm_fp32_falls_back_to_a_dtype_meta_accepts():
    """Mixtral's default expert kernel has a meta function that wants bf16; an fp32 job still traces."""
    model = build_meta_model(mixtral, Target("models.py", "mixtral", "--model"))
    trace = trace_model(model, root=Path.cwd(), batch_size=1, seq_len=8, dtype=torch.float32)
    assert trace.mode.endswith("bfloat16") and trace.backward_calls
    bf16 = trace_model(model, root=Path.cwd(), batch_size=1, seq_len=8, dtype=torch.bfloat16)
    assert bf16.mode == "meta bfloat16" and bf16.forward_calls == trace.forward_calls


def test_a_mask_fast_path_reading_values_is_traced_on_fake_tensors():
    """BART's mask helper reads `q_offset == 0` on meta; on fake tensors transformers skips that fast path."""
    model = build_meta_model(bart, Target("models.py", "bart", "--model"))
    trace = trace_model(model, root=Path.cwd(), batch_size=1, seq_len=8)
    assert trace.mode == "fake float32" and "model.decoder.layers.1" in trace.forward_calls


def test_a_recorded_deepcopy_keeps_no_memo_for_the_replay(monkeypatch):
    """`copy.deepcopy` hands the tensor the caller's memo: ids of objects alive while recording.

    By the replay a fresh storage can have one of those ids, and deepcopy then returns the stale
    copy (a module) in its place: CI saw `expected UntypedStorage, got Linear`. The recorded call
    must copy with a memo of its own, and the replayed clones equal the plain build.
    """
    monkeypatch.setattr(meta_build, "KEEP_NUMEL", 0)

    def clones():
        layer = torch.nn.Linear(4, 4)
        return torch.nn.ModuleList([copy.deepcopy(layer) for _ in range(3)])

    torch.manual_seed(3)
    model = meta_build.build_on_meta(clones, record="exact")
    calls = [c for c in meta_build.program_of(model).calls if "deepcopy" in getattr(c.fn, "__name__", "")]
    assert calls
    assert not [c for c in calls if any(isinstance(a, dict) for a in (*c.args[0], *c.args[1].values()))]
    torch.manual_seed(3)
    plain = clones()
    torch.manual_seed(3)
    got = zr.initialize(clones, CONFIG, device="cpu").full_state_dict()
    assert all(torch.equal(got[k], v) for k, v in plain.state_dict().items())
