"""World size 1 (no process group): equality with plain AdamW, checkpoints, and every misuse error."""

from __future__ import annotations

import dataclasses
import gc

import pytest
import torch
import torch.distributed.checkpoint as dcp
from torch import nn

import runtime_toy as T
import zgen.runtime as zr
from zgen.errors import ZgenError
from zgen.schedule.plan import Plan

FP32_TOL = 1e-5


@pytest.fixture(scope="module")
def ref():
    three, losses, norms = T.reference(3)
    return {"state": three, "losses": losses, "norm": norms[-1], "four": T.reference(4)[0]}


def _engine(accum=2, plan=None, precision="fp32", persistence=0, model=None, **kw):
    return zr.initialize(model or T.make_model(), T.config(1, accum, precision, persistence, **kw.pop("cfg", {})), plan=plan, **kw)


def _close(got, want, tol=FP32_TOL):
    diffs = T.max_diff(got, want)
    worst = max(diffs, key=diffs.get)
    assert diffs[worst] <= tol, f"`{worst}` differs by {diffs[worst]:.3g}"


@pytest.mark.parametrize(
    "accum, plan, persistence",
    [(2, None, 0), (3, None, 20), (4, "explicit", 0)],
    ids=["default-plan", "persistent-params", "explicit-plan"],
)
def test_fp32_equals_plain_adamw(ref, accum, plan, persistence):
    engine = _engine(accum, T.explicit_plan() if plan else None, persistence=persistence)
    T.train(engine, 3, 1, 0, accum)
    assert engine.global_steps == 3 and engine.micro_steps == 3 * accum
    _close(engine.full_state_dict(), ref["state"])
    assert engine.last_grad_norm == pytest.approx(ref["norm"], rel=1e-5)


def test_meta_factory_with_init_fn_equals_plain_init(ref):
    torch.manual_seed(0)  # the seed make_model uses before model.apply(init_fn)
    engine = zr.initialize(T.Net, T.config(1, 2), init_fn=T.init_fn)
    _close(engine.full_state_dict(), {k: v for k, v in T.make_model().state_dict().items()}, 0.0)
    T.train(engine, 3, 1, 0, 2)
    _close(engine.full_state_dict(), ref["state"])


def test_bf16_cast_on_gather_equals_persistent_bf16_copy(ref):
    cast = _engine(precision="bf16", split_master=False)
    kept = _engine(precision="bf16", keep_low_precision=True)
    losses_cast = T.train(cast, 3, 1, 0, 2)
    losses_kept = T.train(kept, 3, 1, 0, 2)
    assert losses_cast == losses_kept
    _close(cast.full_state_dict(), kept.full_state_dict(), 0.0)
    fp32 = T.train(_engine(), 3, 1, 0, 2)
    assert all(abs(a - b) <= 0.05 * a for a, b in zip(fp32, losses_cast))


@pytest.mark.parametrize("accum", [1, 2], ids=["grads-straight-to-optimizer", "accumulated"])
def test_split_master_equals_fp32_master(accum, tmp_path):
    # Equal to 1e-6 because no weight here is an exact bf16 tie, where the split rounds away from zero.
    fp32_master = _engine(accum, precision="bf16", persistence=20, split_master=False)
    split = _engine(accum, precision="bf16", persistence=20)
    assert split.units[0].shards.split and not fp32_master.units[0].shards.split
    assert T.train(fp32_master, 3, 1, 0, accum) == T.train(split, 3, 1, 0, accum)
    _close(split.full_state_dict(), fp32_master.full_state_dict(), 1e-6)
    # checkpoints hold fp32 values whatever the master format: resume without the split
    split.save_checkpoint(str(tmp_path / "ckpt"))
    plain = _engine(accum, precision="bf16", persistence=20, model=T.Net(), split_master=False)
    plain.load_checkpoint(str(tmp_path / "ckpt"))
    _close(plain.full_state_dict(), split.full_state_dict(), 0.0)
    T.train(plain, 1, 1, 0, accum, start=3)
    T.train(split, 1, 1, 0, accum, start=3)
    _close(plain.full_state_dict(), split.full_state_dict(), 1e-6)


def test_split_master_round_trips_every_float():
    from zgen.runtime.split import decode, encode

    bits = torch.randint(-(2**31), 2**31 - 1, (50_000,), dtype=torch.int64).to(torch.int32)
    x = torch.cat([bits.view(torch.float32), torch.tensor([0.0, -0.0, float("inf"), -float("inf"), 1e-45, 3.4e38])])
    hi, lo = torch.empty(x.numel(), dtype=torch.bfloat16), torch.empty(x.numel(), dtype=torch.int16)
    encode(x, hi, lo)
    assert torch.equal(decode(hi, lo).view(torch.int32), x.view(torch.int32))  # bit for bit, NaNs included
    finite = torch.isfinite(x)
    mismatch = (hi[finite].view(torch.int16) != x[finite].to(torch.bfloat16).view(torch.int16)).float().mean()
    assert mismatch < 1e-3  # the compute copy is torch's rounding except on exact ties


def test_fp16_dynamic_loss_scale_trains():
    engine = _engine(precision="fp32", cfg={"fp16": {"enabled": True, "initial_scale_power": 8}})
    assert engine.loss_scale == 256.0
    losses = T.train(engine, 4, 1, 0, 2)
    assert engine.global_steps + engine.skipped_steps == 4
    assert losses[-1] < losses[0]


def test_checkpoint_resume_equals_uninterrupted(ref, tmp_path):
    engine = _engine()
    T.train(engine, 2, 1, 0, 2)
    engine.save_checkpoint(str(tmp_path / "ckpt"))
    resumed = _engine(model=T.Net(), accum=2)  # different weights until the checkpoint is loaded
    resumed.load_checkpoint(str(tmp_path / "ckpt"))
    assert resumed.global_steps == 2 and resumed.micro_steps == 4
    T.train(resumed, 2, 1, 0, 2, start=2)
    _close(resumed.full_state_dict(), ref["four"])


def test_full_state_dict_loads_into_the_plain_model(ref, tmp_path):
    engine = _engine()
    T.train(engine, 3, 1, 0, 2)
    engine.save_full_state_dict(str(tmp_path / "full.pt"))
    plain = T.Net()
    plain.load_state_dict(torch.load(tmp_path / "full.pt"))  # tied names and buffers included
    _close(dict(plain.state_dict()), ref["state"])


def test_scheduler_drives_the_learning_rate():
    sched = {"type": "WarmupLR", "params": {"warmup_min_lr": 0.0, "warmup_max_lr": 0.01, "warmup_num_steps": 4,
                                            "warmup_type": "linear"}}
    engine = _engine(accum=1, cfg={"scheduler": sched})
    seen = []
    for step in range(5):
        seen.append(engine.get_lr()[0])
        T.train(engine, 1, 1, 0, 1, start=step)
    # DeepSpeed steps its scheduler after the optimizer: step k uses the value at iteration k - 1.
    assert seen == pytest.approx([0.0, 0.0, 0.0025, 0.005, 0.0075])


# -- misuse ---------------------------------------------------------------------------------

def test_partitioned_parameter_access_is_an_error():
    engine = _engine()
    w = engine.module.blocks[1].up.weight
    assert tuple(w.shape) == (T.FFN, T.DIM) and w.numel() == T.FFN * T.DIM  # metadata is real
    with pytest.raises(ZgenError, match=r"`blocks\.1\.up\.weight` is partitioned .*unit `blocks\.1`.*outside"):
        _ = w + 1
    with pytest.raises(ZgenError, match="partitioned"):
        torch.nn.utils.clip_grad_norm_(engine.module.parameters(), 1.0)
    with pytest.raises(ZgenError, match="partitioned"):
        engine.module.state_dict()


def test_forward_order_differing_from_the_plan():
    plan = T.explicit_plan()
    fwd = list(plan.forward_order)
    i, j = fwd.index("blocks.0"), fwd.index("blocks.1")
    fwd[i], fwd[j] = fwd[j], fwd[i]
    swapped = dataclasses.replace(plan, forward_order=tuple(fwd))
    engine = _engine(plan=swapped)
    with pytest.raises(ZgenError, match=r"ran unit `blocks\.0` where the plan expects `blocks\.1` \(position 3 of 8"):
        engine(*T.micro_batch(0, 0, 0, 1, 2))


def test_unlisted_external_read_names_the_parameter_and_reader():
    plan = T.explicit_plan()
    units = tuple(dataclasses.replace(u, external=()) if u.module == "proj" else u for u in plan.units)
    engine = _engine(plan=dataclasses.replace(plan, units=units))
    with pytest.raises(ZgenError, match=r"`embed\.weight` is partitioned .*unit `embed`.* inside the forward of unit `proj`"):
        engine(*T.micro_batch(0, 0, 0, 1, 2))


def test_calling_a_unit_outside_the_engine_forward():
    engine = _engine()
    with pytest.raises(ZgenError, match=r"module `blocks\.0` was called outside"):
        engine.module.blocks[0](torch.zeros(2, T.SEQ, T.DIM))


def test_step_without_backward():
    engine = _engine(accum=1)
    engine(*T.micro_batch(0, 0, 0, 1, 1))
    with pytest.raises(ZgenError, match="found no gradients"):
        engine.step()


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda p: dataclasses.replace(p, units=p.units[:-2] + p.units[-1:], forward_order=p.forward_order[:-2] + p.forward_order[-1:],
                                       backward_order=tuple(m for m in p.backward_order if m != "proj"),
                                       forward_prefetch=(), backward_prefetch=()),
         r"does not place 1 parameter\(s\): `proj\.mix\.weight`"),
        (lambda p: Plan.from_dict({**p.to_dict(), "units": [{**u, "module": "nope"} if u["module"] == "head" else u
                                                           for u in p.to_dict()["units"]],
                                   "forward_order": ["nope" if m == "head" else m for m in p.forward_order],
                                   "backward_order": ["nope" if m == "head" else m for m in p.backward_order],
                                   "forward_prefetch": [], "backward_prefetch": []}),
         r"unit for module `nope`, which the model does not have"),
        (lambda p: dataclasses.replace(p, world_size=8), r"made for world size 8 but this job has 1"),
        (lambda p: dataclasses.replace(p, units=tuple(dataclasses.replace(u, external=()) if u.module == "head" else u
                                                      for u in p.units)),
         r"registered as `head\.weight` inside unit `head`, which does not list it as external"),
    ],
    ids=["unplaced-parameter", "unknown-module", "world-size", "tied-alias-not-external"],
)
def test_plan_that_does_not_fit_the_model(edit, message):
    with pytest.raises(ZgenError, match=message):
        _engine(plan=edit(T.explicit_plan()))


def test_meta_parameter_left_uninitialised():
    def partial_init(module):
        if isinstance(module, nn.Linear):
            T.init_fn(module)

    with torch.device("meta"):  # built on meta by its author: only init_fn can give it values
        model = T.Net()
    with pytest.raises(ZgenError, match=r"parameter `blocks\.0\.gate` is uninitialised memory: .* and `init_fn` "
                                        r"never writes it \(\d+ more\)"):
        zr.initialize(model, T.config(1, 2), init_fn=partial_init)


def test_a_constructor_value_init_fn_leaves_alone_is_kept():
    def partial_init(module):
        if isinstance(module, nn.Linear):
            T.init_fn(module)

    engine = zr.initialize(T.Net, T.config(1, 2), init_fn=partial_init)
    assert torch.equal(engine.full_state_dict()["blocks.0.gate"], torch.tensor([0.7]))


def test_init_fn_needs_a_meta_model():
    with pytest.raises(ZgenError, match="init_fn was given but the model already has real weights"):
        zr.initialize(T.make_model(), T.config(1, 2), init_fn=T.init_fn)


@pytest.mark.parametrize("root", [True, False], ids=["root", "units-only"])
@pytest.mark.parametrize("plan", [None, "explicit"], ids=["default-plan", "explicit-plan"])
def test_compiled_units_equal_plain_adamw(ref, plan, root):
    torch._dynamo.reset()
    graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    engine = _engine(2, T.explicit_plan() if plan else None)
    compiled = engine.compile(backend="aot_eager", root=root)
    head = [""] if root else []
    if plan:  # blocks.1 encloses the unit blocks.1.up, so it stays eager
        assert compiled == head + ["embed", "blocks.0", "blocks.1.up", "blocks.2", "proj", "head"]
    else:
        assert compiled == head + ["blocks.0", "blocks.1", "blocks.2"]
    T.train(engine, 3, 1, 0, 2)
    _close(engine.full_state_dict(), ref["state"])
    assert engine.last_grad_norm == pytest.approx(ref["norm"], rel=1e-5)
    with torch.no_grad():  # evaluation through the same compiled units
        assert torch.isfinite(engine(*T.micro_batch(0, 0, 0, 1, 1)))
    if not plan and not root:
        # one graph for all three blocks with gradients, one without
        assert torch._dynamo.utils.counters["stats"]["unique_graphs"] - graphs == 2


class _LossInItsOwnFunction(T.Net):
    """`Net` with its loss in a function of its own, as transformers' models call `self.loss_function`."""

    def forward(self, ids, labels):
        h = self.embed(ids)
        for block in self.blocks:
            h = block(h)
        return self.loss(self.head(self.norm(self.proj(h))) * self.scale[0] + self.scale[1] * self.ramp, labels)

    def loss(self, logits, labels):
        return torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), labels.flatten())


def test_compiled_root_reaches_the_loss_and_no_unit_hook():
    # Dynamo gives up on the root's frame at the loop over units (a graph break in a loop), then
    # compiles the root's callees frame by frame: the loss function and `proj` get graphs of their
    # own, the blocks theirs; the engine's hooks are in none (they are opaque to dynamo).
    seen: list[set[str]] = []

    def record(gm, example_inputs):
        seen.append({str(n.target) for n in gm.graph.nodes if n.op == "call_function"})
        return gm.forward

    torch._dynamo.reset()
    engine = _engine(1, model=T.make_model(model=lambda: _LossInItsOwnFunction()))
    assert engine.compile(backend=record)[0] == ""
    eager = _engine(1, model=T.make_model(model=lambda: _LossInItsOwnFunction()))
    assert T.train(engine, 2, 1, 0, 1) == pytest.approx(T.train(eager, 2, 1, 0, 1), rel=1e-6)
    assert sum(any("cross_entropy" in o for o in ops) for ops in seen) == 1
    blocks = [ops for ops in seen if any("gelu" in o for o in ops)]
    assert len(blocks) == 1 and not any("cross_entropy" in o for o in blocks[0])


class _Stack(nn.Module):
    """The embedding, the loop over the blocks and the final norm, as transformers' `LlamaModel`."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(T.VOCAB, T.DIM)
        self.blocks = nn.ModuleList(T.Block() for _ in range(T.LAYERS))
        self.norm = nn.LayerNorm(T.DIM)

    def forward(self, ids):
        h = self.embed(ids)
        for block in self.blocks:
            h = block(h)
        return self.norm(h)


class _CausalLM(nn.Module):
    """A stack, an output head and the loss inline, as transformers' `LlamaForCausalLM`."""

    def __init__(self) -> None:
        super().__init__()
        self.model = _Stack()
        self.head = nn.Linear(T.DIM, T.VOCAB, bias=False)

    def forward(self, ids, labels):
        logits = self.head(self.model(ids))
        return torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), labels.flatten())


def test_compiled_root_puts_the_head_and_the_loss_in_one_graph():
    # The stack's loop is in a child frame, so the root's frame breaks once at the stack's call
    # and compiles the rest whole: the head's matmul and the cross-entropy (fp32 upcast fused).
    seen: list[set[str]] = []

    def record(gm, example_inputs):
        seen.append({str(n.target) for n in gm.graph.nodes if n.op == "call_function"})
        return gm.forward

    def build():
        torch.manual_seed(0)
        return zr.initialize(_CausalLM(), T.config(1, 1))

    torch._dynamo.reset()
    engine, eager = build(), build()
    engine.compile(backend=record)
    ids = torch.randint(0, T.VOCAB, (2, T.SEQ), generator=torch.Generator().manual_seed(0))
    for e in (engine, eager):
        for _ in range(2):
            loss = e(ids, ids)
            e.backward(loss)
            e.step()
    _close(engine.full_state_dict(), eager.full_state_dict(), 1e-6)
    tails = [ops for ops in seen if any("cross_entropy" in o for o in ops)]
    assert len(tails) == 1 and any("linear" in o for o in tails[0])


def test_compile_keeps_a_forward_wrapper_set_on_the_module():
    def doubled(model):  # a library hook that wraps one block's forward on the instance
        inner = model.blocks[1].forward
        model.blocks[1].forward = lambda x: 2 * inner(x) - x
        return model

    eager = _engine(1, model=doubled(T.make_model()))
    compiled = _engine(1, model=doubled(T.make_model()))
    torch._dynamo.reset()
    compiled.compile(backend="aot_eager")
    assert T.train(compiled, 2, 1, 0, 1) == pytest.approx(T.train(eager, 2, 1, 0, 1), rel=1e-6)


def test_compile_covers_units_that_differ_in_an_int_attribute():
    # Like a transformer block's `layer_idx`: dynamo makes one graph per value, more than its
    # default recompile limit of 8, and without room the later blocks would run eager.
    class Block(nn.Module):
        def __init__(self, i):
            super().__init__()
            self.idx, self.lin = i, nn.Linear(4, 4)

        def forward(self, x):
            return x + self.lin(x) * (self.idx + 1) / 12

    class Deep(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList(Block(i) for i in range(12))

        def forward(self, x):
            for b in self.blocks:
                x = b(x)
            return x.pow(2).mean()

    torch._dynamo.reset()
    graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    cfg = {"train_batch_size": 2, "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}},
           "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0}}
    with torch._dynamo.config.patch(recompile_limit=8):  # torch's default, whatever ran before
        engine = zr.initialize(Deep(), cfg)
        assert len(engine.compile(backend="aot_eager")) == 13  # the root and 12 blocks
        engine.backward(engine(torch.randn(2, 4)))
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] - graphs == 12


@pytest.mark.parametrize("where", ["units", "inside"])
@pytest.mark.parametrize("reentrant", [False, True], ids=["non-reentrant", "reentrant"])
@pytest.mark.parametrize("plan", [None, "explicit"], ids=["default-plan", "explicit-plan"])
def test_activation_checkpointing_equals_plain_adamw(ref, where, reentrant, plan):
    # Recomputation in backward reads weights outside the forward: whole units, part of a unit,
    # and root code outside every unit that reads the tied embedding (`proj`).
    model = T.make_model(model=lambda: T.CheckpointedNet(where, reentrant))
    engine = _engine(2, T.explicit_plan() if plan else None, persistence=20, model=model)
    T.train(engine, 3, 1, 0, 2)
    _close(engine.full_state_dict(), ref["state"])


@pytest.mark.parametrize("reentrant", [False, True], ids=["non-reentrant", "reentrant"])
def test_activation_checkpointing_with_every_parameter_persistent(ref, reentrant):
    # No unit has a backward of its own: only the root's output tells the engine that backward began.
    model = T.make_model(model=lambda: T.CheckpointedNet("units", reentrant))
    engine = _engine(2, persistence=10**9, model=model)
    assert engine.persistent is not None and not any(u.layout.slots for u in engine.units)
    T.train(engine, 3, 1, 0, 2)
    _close(engine.full_state_dict(), ref["state"])


def test_reentrant_checkpoint_inside_a_unit_changes_no_loss():
    """The recomputation gives the same forward; its nested backward adds the gradients reaching a block's
    input in another order, which can move a weight by one fp32 ulp after a step (seen at some seeds)."""
    plain = _engine(1, precision="bf16")
    recomputed = _engine(1, precision="bf16", model=T.make_model(model=lambda: T.CheckpointedNet("inside", reentrant=True)))
    assert T.train(plain, 3, 1, 0, 1) == T.train(recomputed, 3, 1, 0, 1)
    _close(recomputed.full_state_dict(), plain.full_state_dict(), 1e-6)


def test_checkpointed_and_compiled_units(ref):
    torch._dynamo.reset()
    engine = _engine(2, model=T.make_model(model=lambda: T.CheckpointedNet("units", reentrant=True)))
    engine.compile(backend="aot_eager")
    T.train(engine, 3, 1, 0, 2)
    _close(engine.full_state_dict(), ref["state"])


@pytest.fixture(scope="module")
def frozen_ref():
    three, _, norms = T.reference(3, frozen=True)
    return {"state": three, "norm": norms[-1], "four": T.reference(4, frozen=True)[0]}


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
@pytest.mark.parametrize("plan", [None, "explicit"], ids=["default-plan", "explicit-plan"])
def test_frozen_parameters_are_gathered_but_never_updated(frozen_ref, precision, plan):
    engine = _engine(2, T.explicit_plan() if plan else None, precision, persistence=20, model=T.freeze(T.make_model()))
    T.train(engine, 3, 1, 0, 2)
    full = engine.full_state_dict()
    start = T.make_model().state_dict()
    assert all(torch.equal(full[n], start[n]) for n in T.FROZEN)  # bit for bit, weight decay included
    if precision == "fp32":
        _close(full, frozen_ref["state"])
        assert engine.last_grad_norm == pytest.approx(frozen_ref["norm"], rel=1e-5)  # trainable parameters only


def test_frozen_parameters_survive_a_checkpoint(frozen_ref, tmp_path):
    engine = _engine(2, model=T.freeze(T.make_model()))
    T.train(engine, 2, 1, 0, 2)
    engine.save_checkpoint(str(tmp_path / "ckpt"))
    saved = dcp.FileSystemReader(str(tmp_path / "ckpt")).read_metadata().state_dict_metadata
    assert all(f"model.{n}" in saved and f"optim.{n}.exp_avg" not in saved for n in T.FROZEN)  # no Adam moments
    assert "optim.blocks.0.down.weight.exp_avg" in saved
    resumed = zr.initialize(lambda: T.freeze(T.Net()), T.config(1, 2), init_fn=T.init_fn)  # meta-built
    resumed.load_checkpoint(str(tmp_path / "ckpt"))
    T.train(resumed, 2, 1, 0, 2, start=2)
    _close(resumed.full_state_dict(), frozen_ref["four"])


def test_default_plan_shape():
    plan = zr.default_plan(T.Net(), T.config(1, 2, persistence=20))
    assert plan.forward_order == ("", "blocks.0", "blocks.1", "blocks.2")
    assert plan.backward_order == ("", "blocks.2", "blocks.1", "blocks.0")
    assert not plan.unit("").reshard_after_forward and plan.unit("blocks.0").reshard_after_forward
    assert set(plan.persistent) == {n for n, p in T.Net().named_parameters() if p.numel() <= 20}
    assert plan.forward_prefetch[0] == ("blocks.0", "blocks.1", "blocks.2")  # all fit the 5e7-element bucket
    cfg = T.config(1, 2)
    cfg["zero_optimization"]["stage3_prefetch_bucket_size"] = 1
    tight = zr.default_plan(T.Net(), cfg)
    assert tight.forward_prefetch == (("blocks.0",), ("blocks.1",), ("blocks.2",), ())
    assert tight.backward_prefetch == ((), ("blocks.1",), ("blocks.0",), ())  # none during the loss backward


def test_engine_is_collected_after_use():
    import gc
    import weakref

    engine = _engine()
    T.train(engine, 1, 1, 0, 2)
    masters = [weakref.ref(u) for u in engine._all]
    gone = weakref.ref(engine)
    del engine
    gc.collect()
    assert gone() is None and all(m() is None for m in masters)  # no autograd cycle keeps the shards alive


# -- optimizers beyond Adam, offload, checkpoint safety ----------------------------------------

def _no_optimizer(accum=2, **zero):
    cfg = T.config(1, accum)
    del cfg["optimizer"]
    cfg["zero_optimization"].update(zero)
    return cfg


@pytest.mark.parametrize(
    "ds_type, params, torch_factory",
    [
        ("SGD", {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.1, "nesterov": True},
         lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.1, nesterov=True)),
        ("Adagrad", {"lr": 0.05, "weight_decay": 0.01}, lambda p: torch.optim.Adagrad(p, lr=0.05, weight_decay=0.01)),
        ("RMSprop", {"lr": 0.01, "momentum": 0.5}, lambda p: torch.optim.RMSprop(p, lr=0.01, momentum=0.5)),
    ],
)
def test_config_torch_optimizers_equal_plain_training(ds_type, params, torch_factory):
    cfg = T.config(1, 2)
    cfg["optimizer"] = {"type": ds_type, "params": params}
    engine = _engine(cfg=cfg)
    T.train(engine, 3, 1, 0, 2)
    _close(engine.full_state_dict(), T.reference(3, optimizer=torch_factory)[0])


def test_lion_follows_its_update_rule():
    from zgen.runtime.lion import Lion

    torch.manual_seed(3)
    p = torch.randn(50, requires_grad=True)
    grads = [torch.randn(50) for _ in range(3)]
    w, m = p.detach().clone(), torch.zeros(50)
    opt = Lion([p], lr=0.01, betas=(0.9, 0.99), weight_decay=0.1)
    for g in grads:
        p.grad = g.clone()
        opt.step()
        c = 0.9 * m + 0.1 * g
        w = w * (1 - 0.01 * 0.1) - 0.01 * torch.sign(c)
        m = 0.99 * m + 0.01 * g
    assert torch.allclose(p.detach(), w, atol=1e-7) and torch.allclose(opt.state[p]["exp_avg"], m, atol=1e-7)


def test_config_lion_equals_plain_lion():
    from zgen.runtime.lion import Lion

    cfg = T.config(1, 2)
    cfg["optimizer"] = {"type": "Lion", "params": {"lr": 1e-3, "betas": [0.9, 0.99], "weight_decay": 0.1}}
    engine = _engine(cfg=cfg, plan=T.explicit_plan())
    T.train(engine, 3, 1, 0, 2)
    _close(engine.full_state_dict(), T.reference(3, optimizer=lambda p: Lion(p, lr=1e-3, betas=(0.9, 0.99), weight_decay=0.1))[0])


def test_unknown_torch_optimizer_and_foreign_factory_are_errors():
    cfg = T.config(1, 2)
    cfg["optimizer"] = {"type": "NoSuchOptim", "params": {}}
    with pytest.raises(ZgenError, match=r"'NoSuchOptim' is neither"):
        zr.initialize(T.make_model(), cfg)
    cfg["optimizer"] = {"type": "SGD", "params": {"lr": 0.1, "momentun": 0.9}}
    with pytest.raises(ZgenError, match=r"`optimizer\.params` do not fit SGD"):
        zr.initialize(T.make_model(), cfg)
    stray = torch.zeros(3, requires_grad=True)
    with pytest.raises(ZgenError, match="over exactly the tensors it is given"):
        zr.initialize(T.make_model(), _no_optimizer(), optimizer=lambda params: torch.optim.SGD([stray], lr=0.1))
    with pytest.raises(ZgenError, match="has an `optimizer` block"):
        zr.initialize(T.make_model(), T.config(1, 2), optimizer=T.sgd)


@pytest.mark.parametrize("offload", [False, True])
def test_client_optimizer_trains_and_survives_a_checkpoint(offload, tmp_path):
    zero = {"offload_optimizer": {"device": "cpu"}} if offload else {}
    engine = zr.initialize(T.make_model(), _no_optimizer(**zero), optimizer=T.sgd)
    assert engine.get_lr() == [T.SGD_LR]  # the client's own learning rate (no config scheduler)
    T.train(engine, 2, 1, 0, 2)
    engine.save_checkpoint(str(tmp_path / "ckpt"))
    resumed = zr.initialize(T.Net(), _no_optimizer(**zero), optimizer=T.sgd)
    resumed.load_checkpoint(str(tmp_path / "ckpt"))
    T.train(resumed, 2, 1, 0, 2, start=2)
    _close(resumed.full_state_dict(), T.reference(4, optimizer=T.sgd)[0])


@pytest.mark.parametrize("params", [False, True], ids=["optimizer", "optimizer+params"])
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_offload_equals_the_in_device_optimizer(ref, precision, params, tmp_path):
    cfg = T.config(1, 2, precision)
    cfg["zero_optimization"]["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
    if params:
        cfg["zero_optimization"]["offload_param"] = {"device": "cpu"}
    engine = _engine(cfg=cfg)
    shards = engine.units[0].shards
    assert shards.master.device.type == "cpu" and not shards.split
    # with parameter offload the unit computes from a gathered copy that is freed after use
    assert (shards.lp.device.type == "cpu" and not shards.static) if params else shards.static
    T.train(engine, 2, 1, 0, 2)
    engine.save_checkpoint(str(tmp_path / "ckpt"))
    T.train(engine, 1, 1, 0, 2, start=2)
    if precision == "fp32":
        _close(engine.full_state_dict(), ref["state"])
    else:  # the same fp32-master update as split_master=False, in host memory
        inside = _engine(precision="bf16", split_master=False)
        T.train(inside, 3, 1, 0, 2)
        _close(engine.full_state_dict(), inside.full_state_dict(), 1e-6)
    resumed = _engine(cfg=cfg, model=T.Net())
    resumed.load_checkpoint(str(tmp_path / "ckpt"))
    T.train(resumed, 1, 1, 0, 2, start=2)
    _close(resumed.full_state_dict(), engine.full_state_dict(), 1e-6)


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_partial_offload_equals_whole_offload_and_checkpoints_move_between_them(precision, tmp_path):
    def engine_at(ratio, model=None):
        zero = {"stage": 3, "stage3_param_persistence_threshold": 0,
                "offload_optimizer": {"device": "cpu", "ratio": ratio}}
        return _engine(2, T.explicit_plan(), precision, model=model, cfg={"zero_optimization": zero})

    partial, whole = engine_at(0.5), engine_at(1.0)
    kept = [g.label for g in partial._stepper.order if not g.shards.offload]
    assert kept and len(kept) < len(partial._stepper.order)  # the first units in step order, not all of them
    # walking the step order, each unit whose parameters still fit in half of them stays (zero_policy's rule)
    from zgen.zero_policy import optimizer_on_device
    sizes = [(g.label, sum(s.numel for s in g.shards.layout.slots)) for g in partial._stepper.order]
    assert set(kept) == optimizer_on_device(sizes, 0.5) and kept[0] == partial._stepper.order[0].label
    assert all(partial._by_label[k].shards.static for k in kept)  # computes from its own compute-dtype copy
    losses = T.train(partial, 2, 1, 0, 2)
    assert losses == T.train(whole, 2, 1, 0, 2)
    partial.save_checkpoint(str(tmp_path / "partial"))
    losses += T.train(partial, 1, 1, 0, 2, start=2)
    _bits(partial.full_state_dict(), _trained(whole, 1, start=2))
    resumed = engine_at(1.0, model=T.Net())  # every unit's state from the partial checkpoint, now on the host
    resumed.load_checkpoint(str(tmp_path / "partial"))
    T.train(resumed, 1, 1, 0, 2, start=2)
    _bits(resumed.full_state_dict(), partial.full_state_dict())


def _trained(engine, steps: int, start: int) -> dict:
    T.train(engine, steps, 1, 0, 2, start=start)
    return engine.full_state_dict()


def _offloaded(accum: int, params: bool, plan, early: bool, clip: float = 0.0, model=None):
    """An engine with optimizer (and parameter) offload; `early` False keeps every update for `engine.step()`.

    Counts the updates started in backward in `engine.early_starts`.
    """
    zero = {"stage": 3, "stage3_param_persistence_threshold": 0, "offload_optimizer": {"device": "cpu"}}
    if params:
        zero["offload_param"] = {"device": "cpu"}
    engine = _engine(accum, plan, model=model, cfg={"gradient_clipping": clip, "zero_optimization": zero})
    stepper, engine.early_starts = engine._stepper, 0
    if not early:
        stepper._early_ok = False
    start = stepper.start_early

    def counted(g):
        engine.early_starts += 1
        start(g)

    stepper.start_early = counted
    return engine


def _bits(got: dict, want: dict) -> None:
    assert got.keys() == want.keys()
    assert [k for k in got if not torch.equal(got[k], want[k])] == []


@pytest.mark.parametrize(
    "accum, params, plan",
    [(1, False, None), (2, True, None), (3, False, "explicit"), (1, True, "explicit")],
    ids=["opt", "opt+params-accum2", "opt-explicit-accum3", "opt+params-explicit"],
)
def test_offloaded_updates_started_in_backward_equal_those_started_at_the_step(accum, params, plan, tmp_path):
    plan = T.explicit_plan() if plan else None
    runs = {}
    for early in (True, False):
        engine = _offloaded(accum, params, plan, early)
        losses = T.train(engine, 2, 1, 0, accum)
        engine.save_checkpoint(str(tmp_path / f"ckpt_{early}"))
        losses += T.train(engine, 1, 1, 0, accum, start=2)
        resumed = _offloaded(accum, params, plan, early, model=T.Net())
        resumed.load_checkpoint(str(tmp_path / f"ckpt_{early}"))
        losses += T.train(resumed, 2, 1, 0, accum, start=2)
        runs[early] = (losses, engine.full_state_dict(), resumed.full_state_dict(),
                       engine.early_starts + resumed.early_starts)
    (losses, state, resumed, starts), (losses_w, state_w, resumed_w, starts_w) = runs[True], runs[False]
    units = sum(g.trainable for g in engine._stepper.order)
    # the first window of each engine waits for the step; every later one starts every unit's update in backward
    assert starts == units * (2 + 1) and starts_w == 0
    assert losses == losses_w
    _bits(state, state_w)
    _bits(resumed, resumed_w)


@pytest.mark.parametrize("reentrant", [True, False])
def test_offloaded_updates_start_in_backward_under_activation_checkpointing_inside_units(reentrant):
    """A checkpoint around part of each unit: its gradients arrive through the unit's backward window."""
    runs = {}
    for early in (True, False):
        model = T.make_model(model=lambda: T.CheckpointedNet("inside", reentrant=reentrant))
        engine = _offloaded(2, False, None, early, model=model)
        runs[early] = T.train(engine, 3, 1, 0, 2), engine.full_state_dict(), engine.early_starts
    assert runs[True][2] > 0 and runs[True][0] == runs[False][0]
    _bits(runs[True][1], runs[False][1])


def test_offloaded_updates_wait_for_the_step_under_clipping(ref):
    engine = _offloaded(2, False, None, early=True, clip=T.CLIP)
    T.train(engine, 3, 1, 0, 2)
    assert engine.early_starts == 0  # the clipping factor needs every gradient's norm
    _close(engine.full_state_dict(), ref["state"])


def _two_forwards(engine, step: int) -> float:
    """One micro-step whose backward reaches every unit twice (two forwards, one loss)."""
    ids, labels = T.micro_batch(step, 0, 0, 1, 1)
    loss = engine(ids[:2], labels[:2]) + engine(ids[2:], labels[2:])
    engine.backward(loss)
    engine.step()
    return loss.item()


def test_a_unit_reached_twice_in_backward_keeps_its_update_for_the_step():
    runs = {}
    for early in (True, False):
        engine = _offloaded(1, False, None, early)
        losses = [_two_forwards(engine, step) for step in range(3)]
        runs[early] = losses, engine.full_state_dict(), engine.early_starts
    assert runs[True][2] == 0 and runs[True][0] == runs[False][0]
    _bits(runs[True][1], runs[False][1])
    # Seen only after the first window has turned early updates on: refused, the update had begun.
    engine = _offloaded(1, False, None, True)
    T.train(engine, 1, 1, 0, 1)
    with pytest.raises(ZgenError, match=r"received gradients after its post-backward.*had already started"):
        _two_forwards(engine, 1)


def test_host_queue_runs_what_is_waiting_in_the_order_asked():
    import threading

    from zgen.runtime.offload import _HostQueue

    queue, gate, ran = _HostQueue(), threading.Event(), []
    first = queue.submit("a", gate.wait)  # holds the thread while the others queue up
    jobs = [queue.submit(k, ran.append, k) for k in ("d", "c", "b", "x")]
    queue.prioritize(["a", "b", "c", "d"])
    gate.set()
    first.result()
    for j in jobs:
        j.result()
    assert ran == ["b", "c", "d", "x"]  # `x` is not in the order: after the others
    failing = queue.submit("e", lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        failing.result()
    landed = {"p": False}  # an update whose gradient is still being copied down waits for the ready ones
    gate = threading.Event()
    first = queue.submit("a", gate.wait)
    ran.clear()
    jobs = [queue.submit(k, ran.append, k, ready=lambda k=k: landed.get(k, True)) for k in ("p", "q", "r")]
    queue.prioritize(["p", "r", "q"])
    gate.set()
    for j in jobs[1:]:
        j.result()
    landed["p"] = True
    jobs[0].result()
    assert ran == ["r", "q", "p"]
    thread = queue._thread
    del queue
    gc.collect()
    thread.join(timeout=10)
    assert not thread.is_alive()  # a dropped queue (engine) leaves no thread behind


def test_a_failed_save_leaves_no_checkpoint_behind(tmp_path, monkeypatch):
    engine = _engine()
    T.train(engine, 1, 1, 0, 2)
    engine.save_checkpoint(str(tmp_path / "ckpt"))  # an older, complete checkpoint
    real_save = dcp.save

    def crash(state_dict, checkpoint_id, **kw):
        real_save(state_dict, checkpoint_id=checkpoint_id, **kw)
        (tmp_path / "ckpt.partial" / ".metadata").unlink()  # as if killed before the end
        raise RuntimeError("disk full")

    monkeypatch.setattr(dcp, "save", crash)
    T.train(engine, 1, 1, 0, 2, start=1)
    with pytest.raises(RuntimeError, match="disk full"):
        engine.save_checkpoint(str(tmp_path / "ckpt"))
    monkeypatch.undo()
    resumed = _engine(model=T.Net())
    resumed.load_checkpoint(str(tmp_path / "ckpt"))  # still the complete older one
    assert resumed.global_steps == 1
    engine.save_checkpoint(str(tmp_path / "ckpt"))  # a later save replaces it and clears the partial one
    assert not (tmp_path / "ckpt.partial").exists() and not (tmp_path / "ckpt.old").exists()
    resumed.load_checkpoint(str(tmp_path / "ckpt"))
    assert resumed.global_steps == 2


def test_a_save_that_died_between_its_renames_does_not_block_the_next(tmp_path):
    engine = _engine()
    T.train(engine, 1, 1, 0, 2)
    engine.save_checkpoint(str(tmp_path / "ckpt"))
    (tmp_path / "ckpt.old").mkdir()  # left by a save killed after moving the previous checkpoint aside
    (tmp_path / "ckpt.old" / "stale").write_text("x")
    T.train(engine, 1, 1, 0, 2, start=1)
    engine.save_checkpoint(str(tmp_path / "ckpt"))
    assert not (tmp_path / "ckpt.old").exists()
    resumed = _engine(model=T.Net())
    resumed.load_checkpoint(str(tmp_path / "ckpt"))
    assert resumed.global_steps == 2


def test_world_size_above_one_without_numpy_stops_before_training(monkeypatch):
    from zgen.runtime.checkpoint import require_numpy

    def no_numpy(self):
        raise RuntimeError("Numpy is not available")  # what torch raises when numpy is not installed

    monkeypatch.setattr(torch.Tensor, "numpy", no_numpy)
    require_numpy(1)  # one process: DCP saves without object collectives
    with pytest.raises(ZgenError, match=r"world size above 1 needs numpy") as e:
        require_numpy(2)
    assert "zgen[train]" in e.value.help


# -- the plan's memory choices: units recomputed in backward, the head and loss fused ------------------------

def _every_other(cfg=None) -> Plan:
    return T.planned(zr.default_plan(T.make_model(), cfg or T.config(1, 2)), recompute=("blocks.0", "blocks.2"))


@pytest.mark.parametrize("which", ["every", "every-other"])
def test_planned_recomputation_equals_plain_adamw(ref, which, monkeypatch):
    base = zr.default_plan(T.make_model(), T.config(1, 2))
    blocks = tuple(u.module for u in base.units if u.module.startswith("blocks."))
    plan = T.planned(base, recompute=blocks if which == "every" else blocks[::2])
    recomputed = []
    real = zr.recompute.checkpoint
    monkeypatch.setattr(zr.recompute, "checkpoint", lambda fn, *a, **k: recomputed.append(fn) or real(fn, *a, **k))
    engine = _engine(2, plan)
    T.train(engine, 3, 1, 0, 2)
    _close(engine.full_state_dict(), ref["state"])
    assert len(recomputed) == 3 * 2 * len(plan and [u for u in plan.units if u.recompute])
    assert isinstance(engine.module.blocks[0].forward, zr.recompute.Recomputed)
    assert not isinstance(engine.module.blocks[1].__dict__.get("forward"), zr.recompute.Recomputed) or which == "every"


def test_planned_recomputation_composes_with_compile_offload_and_checkpoints(ref, tmp_path):
    torch._dynamo.reset()
    cfg = T.config(1, 2)
    cfg["zero_optimization"]["offload_optimizer"] = {"device": "cpu"}
    engine = _engine(2, _every_other(), cfg=cfg)
    engine.compile(backend="aot_eager")
    assert isinstance(engine.module.blocks[0].forward, zr.recompute.Recomputed)  # still eager around the graph
    T.train(engine, 2, 1, 0, 2)
    engine.save_checkpoint(str(tmp_path / "ckpt"))
    resumed = _engine(2, _every_other(), cfg=cfg, model=T.Net())
    resumed.load_checkpoint(str(tmp_path / "ckpt"))
    T.train(resumed, 1, 1, 0, 2, start=2)
    _close(resumed.full_state_dict(), ref["state"])


@pytest.fixture(scope="module")
def lm_ref():
    return T.reference(3, model=T.LMNet)[0]


@pytest.mark.parametrize("chunk_rows", [None, 7], ids=["one-chunk", "chunks-of-7-rows"])
@pytest.mark.parametrize("recompute", [False, True], ids=["", "recompute"])
def test_fused_head_loss_equals_plain_adamw(lm_ref, chunk_rows, recompute):
    plan = T.planned(zr.default_plan(T.make_model(), T.config(1, 2)), head_loss="head",
                     recompute=("blocks.1",) if recompute else ())
    engine = _engine(2, plan, model=T.make_model(model=T.LMNet))
    if chunk_rows:
        engine.head_loss.chunk_bytes = chunk_rows * 4 * T.VOCAB
    T.train(engine, 3, 1, 0, 2)
    _close(engine.full_state_dict(), lm_ref)
    assert engine.head_loss.fused == 6 and engine.head_loss.materialized == 0


def test_fused_head_loss_compiled_with_offload(lm_ref):
    torch._dynamo.reset()
    cfg = T.config(1, 2)
    cfg["zero_optimization"]["offload_optimizer"] = {"device": "cpu"}
    plan = T.planned(zr.default_plan(T.make_model(), cfg), head_loss="head", recompute=("blocks.0",))
    engine = _engine(2, plan, model=T.make_model(model=T.LMNet), cfg=cfg)
    assert "" not in engine.compile(backend="aot_eager")  # the root stays eager with a fused head
    T.train(engine, 3, 1, 0, 2)
    _close(engine.full_state_dict(), lm_ref)
    assert engine.head_loss.fused == 6


def test_head_loss_computes_the_logits_where_the_model_uses_them(ref):
    # Net scales its logits and adds a ramp before the loss: the stand-in computes them, the result is plain.
    engine = _engine(2, T.planned(zr.default_plan(T.make_model(), T.config(1, 2)), head_loss="head"))
    T.train(engine, 3, 1, 0, 2)
    _close(engine.full_state_dict(), ref["state"])
    assert engine.head_loss.fused == 0 and engine.head_loss.materialized == 6


@pytest.mark.parametrize("edit, message", [
    (lambda p: dataclasses.replace(p, head_loss="nohead"), "head_loss names module `nohead`"),
    (lambda p: T.planned(p, recompute=("",)), "recomputes the root unit"),
])
def test_plan_memory_choices_that_do_not_fit_the_model(edit, message):
    with pytest.raises(ZgenError, match=message):
        _engine(2, edit(zr.default_plan(T.make_model(), T.config(1, 2))))
