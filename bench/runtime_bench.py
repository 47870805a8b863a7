"""zgen.runtime against FSDP2, plain PyTorch and DeepSpeed ZeRO-3, side by side on the same GPU(s).

    python bench/runtime_bench.py                         # one GPU, every system
    torchrun --nproc_per_node 8 bench/runtime_bench.py    # N GPUs (plain PyTorch runs as DDP)
    python bench/runtime_bench.py --check                 # GPU correctness checks on the tiny model, then the benchmark

The model is examples/llama/model.py (Llama-3.2-1B shape unless --layers/--seq
say otherwise), micro batch 1, bf16, AdamW with the seed config's settings and
clipping at 1.0. Every system starts from the same weights and sees the same
tokens, so their first losses agree up to bf16 rounding. Each system runs in
turn in this one process: setup, --warmup steps, then --steps timed steps (one
optimizer step each unless --grad-accum says otherwise). Step time is the
median of CUDA-event timings; peak memory is torch's max allocated / reserved
since the end of that system's setup.

Systems: plain (fp32 weights, bf16 autocast, fused AdamW), fsdp2 (fully_shard
per block and on the root without resharding it, bf16 parameters, fp32
reduction, fused AdamW), fsdp2-prefetch (the same with explicit prefetch: each
block's forward prefetches the next block, each block's backward the previous
one), zgen (zgen.runtime defaults: the default plan, or the `--plan` JSON from
`zgen plan --json`, split master with its Triton AdamW pass), zgen-fp32master (split_master=False:
fp32 shards stepped by torch's fused AdamW, units cast just in time at world
size 1), zgen-keep (split_master=False, keep_low_precision=True: a
persistent bf16 copy at world size 1),
deepspeed (0.19.8 ZeRO-3 with examples/llama/ds_config.json; its optimizer is
torch's fused AdamW via "torch_adam" so nothing is JIT-compiled, and its
wall_clock_breakdown, flops_profiler and per-step printing are turned off
because they add synchronisations), deepspeed-seed (the same with the seed
config's wall_clock_breakdown, flops profiler and steps_per_print left on), deepspeed-asis (the
seed config exactly as written: DeepSpeed's own FusedAdam, JIT-compiled at setup, timers on).

`--sync-each-step` also times each system the way a training script does:
host wall time per step ending in a `.item()` of the step's loss.

Writes one JSON line per system to --out (default $OUT/runtime_bench.jsonl
when $OUT is set) and prints a table last.
"""

from __future__ import annotations

import argparse
import functools
import gc
import importlib.util
import json
import os
import socket
import statistics
import sys
import tempfile
import time
import types
from pathlib import Path

import torch
import torch.distributed as dist
from torch.utils.checkpoint import checkpoint

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import zgen.runtime as zr  # noqa: E402

GiB = 2**30


def load_llama():
    spec = importlib.util.spec_from_file_location("llama_model", REPO / "examples/llama/model.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up while the file executes
    spec.loader.exec_module(mod)
    return mod


L = load_llama()
SEED_CONFIG = json.loads((REPO / "examples/llama/ds_config.json").read_text())


# Llama-3.2 shapes (tied embeddings, vocabulary 128256, 8 KV heads, FFN 8192 in both).
SHAPES = {
    "1b": {},  # LlamaConfig's defaults: 16 layers, hidden 2048, 32 heads
    "3b": {"hidden_size": 3072, "num_hidden_layers": 28, "num_attention_heads": 24},
}


def flops_per_token(c, seq: int) -> float:
    """6 x matmul parameters + 12 x layers x hidden x seq (attention, counted without the causal half)."""
    kv = c.num_key_value_heads * c.head_dim
    per_layer = 2 * c.hidden_size**2 + 2 * c.hidden_size * kv + 3 * c.hidden_size * c.intermediate_size
    matmul = c.num_hidden_layers * per_layer + c.vocab_size * c.hidden_size
    return 6 * matmul + 12 * c.num_hidden_layers * c.hidden_size * seq


def build(cfg, device, seed: int = 0):
    with torch.device(device):
        model = L.LlamaForCausalLM(cfg)
    torch.manual_seed(seed)
    model.apply(L.init_weights)
    return model


OFFLOAD = {"device": "cpu", "pin_memory": True}


def ds_config(accum: int, instrumented: bool = False, as_is: bool = False, offload: bool | str = False) -> dict:
    """The seed config with --grad-accum and torch's fused AdamW; its timers and profiler off unless `instrumented`.

    `as_is` keeps the seed config exactly as written (DeepSpeed's own FusedAdam, JIT-compiled on first
    use, timers and profiler on): DeepSpeed the way a user launching the seed config runs it.
    """
    cfg = json.loads(json.dumps(SEED_CONFIG))
    cfg["gradient_accumulation_steps"] = accum
    if as_is:
        cfg.pop("train_batch_size", None)
        return cfg
    if not instrumented:
        cfg["wall_clock_breakdown"] = False
        cfg["flops_profiler"] = {"enabled": False}
        cfg["steps_per_print"] = 10**9
    cfg.pop("train_batch_size", None)
    if offload:  # DeepSpeed's own offload path: its AVX CPU Adam (JIT-built at setup)
        cfg["zero_optimization"]["offload_optimizer"] = dict(OFFLOAD)
        if offload == "param":
            cfg["zero_optimization"]["offload_param"] = dict(OFFLOAD)
        return cfg
    cfg["optimizer"]["params"].update({"torch_adam": True, "fused": True})
    return cfg


def zgen_config(accum: int, offload: bool | str = False) -> dict:
    """zgen's config: the seed's; `offload` True offloads the optimizer, "param" the parameters as well."""
    cfg = ds_config(accum)
    cfg["optimizer"]["params"] = {k: v for k, v in cfg["optimizer"]["params"].items() if k not in ("torch_adam", "fused")}
    if offload:
        cfg["zero_optimization"]["offload_optimizer"] = dict(OFFLOAD)
    if offload == "param":
        cfg["zero_optimization"]["offload_param"] = dict(OFFLOAD)
    return cfg


# -- systems: each returns (step_fn, cleanup_objects) -------------------------------------------

def checkpoint_layers(model, reentrant: bool = False) -> None:
    """Activation checkpointing per decoder layer: each layer's forward is recomputed in backward."""
    for layer in model.layers:
        layer.forward = functools.partial(checkpoint, layer.forward, use_reentrant=reentrant)


def freeze_some(model) -> None:
    """requires_grad=False on the (tied) embedding and on the first decoder layer."""
    for p in list(model.embed_tokens.parameters()) + list(model.layers[0].parameters()):
        p.requires_grad_(False)


def compile_blocks(model) -> None:
    """Regional compilation for the baselines, as `Engine.compile()` does it for zgen.

    Each decoder layer's `forward` is compiled (one graph shared by all
    layers); module hooks (FSDP2's unshard/reshard) stay eager around it.
    The root's `forward` is compiled too, as `Engine.compile(root=True)`
    does: dynamo gives up on its frame at the first layer call (a graph
    break in a loop), and compiles the functions and modules it calls that
    are not layers (the final norm, the rotary tables) frame by frame.
    """
    compiled = torch.compile(type(model.layers[0]).forward)
    for layer in model.layers:
        layer.forward = types.MethodType(compiled, layer)
    model.forward = types.MethodType(torch.compile(type(model).forward), model)


def seed_adamw(params, fused: bool = False) -> torch.optim.AdamW:
    """torch's AdamW with the seed config's settings (every baseline and reference uses it)."""
    p = SEED_CONFIG["optimizer"]["params"]
    return torch.optim.AdamW(params, lr=p["lr"], betas=p["betas"], weight_decay=p["weight_decay"], fused=fused)


def clip_and_step(params, opt) -> None:
    """The seed config's gradient clipping (0: none), the optimizer step, and clearing the gradients."""
    if SEED_CONFIG["gradient_clipping"] > 0:
        torch.nn.utils.clip_grad_norm_(params, SEED_CONFIG["gradient_clipping"])
    opt.step()
    opt.zero_grad(set_to_none=True)


def fsdp2_shard(model) -> None:
    """`fully_shard` per decoder layer and on the root: bf16 parameters, fp32 reduction."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in model.layers:
        fully_shard(layer, mp_policy=mp)
    fully_shard(model, mp_policy=mp, reshard_after_forward=False)


def setup_plain(model, args, world, compiled: bool = False):
    from torch.nn.parallel import DistributedDataParallel as DDP

    if compiled:
        compile_blocks(model)

    net = DDP(model, gradient_as_bucket_view=True) if world > 1 else model
    opt = seed_adamw(model.parameters(), fused=True)

    def step(batches, mark):
        losses = []
        for i, (ids, labels) in enumerate(batches):
            last = i == len(batches) - 1
            ctx = net.no_sync() if (world > 1 and not last) else _null()
            with ctx:
                with torch.autocast(ids.device.type, dtype=torch.bfloat16):
                    loss = net(ids, labels)
                mark("fwd")
                (loss / len(batches)).backward()
            mark("bwd")
            losses.append(loss.detach())
        clip_and_step(model.parameters(), opt)
        return losses

    return step, [net, opt]


def setup_fsdp2(model, args, world, prefetch: bool = False, compiled: bool = False):
    if compiled:
        compile_blocks(model)
    fsdp2_shard(model)
    if prefetch:  # one block ahead in each direction, on top of FSDP2's implicit next-unshard
        blocks = list(model.layers)
        for i, block in enumerate(blocks):
            if i + 1 < len(blocks):
                block.set_modules_to_forward_prefetch([blocks[i + 1]])
            if i > 0:
                block.set_modules_to_backward_prefetch([blocks[i - 1]])
    opt = seed_adamw(model.parameters(), fused=True)

    def step(batches, mark):
        losses = []
        for i, (ids, labels) in enumerate(batches):
            if len(batches) > 1:
                model.set_requires_gradient_sync(i == len(batches) - 1)
            loss = model(ids, labels)
            mark("fwd")
            (loss / len(batches)).backward()
            mark("bwd")
            losses.append(loss.detach())
        clip_and_step(model.parameters(), opt)
        return losses

    return step, [opt]


def load_plan(path: str | None):
    """The `zgen plan --json` file given with --plan, or None for the runtime's default plan."""
    if not path:
        return None
    from zgen.schedule.plan import Plan

    return Plan.from_json(Path(path).read_text())


def engine_step(engine):
    """The step of a DeepSpeed-style engine (zgen's or DeepSpeed's): it accumulates and steps by itself."""

    def step(batches, mark):
        losses = []
        for ids, labels in batches:
            loss = engine(ids, labels)
            mark("fwd")
            engine.backward(loss)
            mark("bwd")
            engine.step()
            losses.append(loss.detach())
        return losses

    return step


def setup_zgen(model, args, world, compiled: bool = False, offload: bool | str = False, **options):
    cfg = zgen_config(getattr(args, "grad_accum", 1), offload)
    if offload and getattr(args, "offload_ratio", 1.0) < 1.0:  # auto_bench: the plan's partial offload
        cfg["zero_optimization"]["offload_optimizer"]["ratio"] = args.offload_ratio
    engine = zr.initialize(model, cfg, plan=load_plan(getattr(args, "plan", None)), **options)
    kept = [g.label for g in engine._stepper.order if not g.shards.offload] if offload else []
    if kept:
        print(f"optimizer kept on the GPU (offload_optimizer.ratio {args.offload_ratio:.4f}): {kept}", flush=True)
    if compiled:
        engine.compile()

    return engine_step(engine), [engine]


def setup_deepspeed(model, args, world, instrumented=False, as_is=False, compiled=False, offload: bool | str = False):
    import deepspeed

    cfg = ds_config(getattr(args, "grad_accum", 1), instrumented, as_is, offload)
    engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
    if compiled:
        engine.compile()  # DeepSpeed's own entry point (whole module, its ZeRO-3 hooks made compile-aware)

    return engine_step(engine), [engine]


SYSTEMS = {
    "plain": setup_plain,
    "fsdp2": setup_fsdp2,
    "fsdp2-prefetch": lambda m, a, w: setup_fsdp2(m, a, w, prefetch=True),
    "zgen": setup_zgen,
    "zgen-fp32master": lambda m, a, w: setup_zgen(m, a, w, split_master=False),
    "zgen-keep": lambda m, a, w: setup_zgen(m, a, w, keep_low_precision=True),
    "deepspeed": setup_deepspeed,
    "deepspeed-seed": lambda m, a, w: setup_deepspeed(m, a, w, instrumented=True),
    "deepspeed-asis": lambda m, a, w: setup_deepspeed(m, a, w, as_is=True),
    # optimizer offload to the host (offload_optimizer: cpu, pinned)
    "zgen-offload": lambda m, a, w: setup_zgen(m, a, w, offload=True),
    "zgen-offload-compile": lambda m, a, w: setup_zgen(m, a, w, compiled=True, offload=True),
    "zgen-offload-param": lambda m, a, w: setup_zgen(m, a, w, offload="param"),
    "deepspeed-offload": lambda m, a, w: setup_deepspeed(m, a, w, offload=True),
    "deepspeed-offload-param": lambda m, a, w: setup_deepspeed(m, a, w, offload="param"),
    # torch.compile variants: decoder layers compiled regionally, DeepSpeed through engine.compile()
    "plain-compile": lambda m, a, w: setup_plain(m, a, w, compiled=True),
    "fsdp2-compile": lambda m, a, w: setup_fsdp2(m, a, w, compiled=True),
    "zgen-compile": lambda m, a, w: setup_zgen(m, a, w, compiled=True),
    "deepspeed-compile": lambda m, a, w: setup_deepspeed(m, a, w, compiled=True),
}


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


# -- measurement ----------------------------------------------------------------------------------

def data(args, cfg, rank: int, device) -> list[list[tuple[torch.Tensor, torch.Tensor]]]:
    steps = []
    for s in range(args.warmup + args.steps):
        micro = []
        for m in range(args.grad_accum):
            g = torch.Generator().manual_seed(10_000 * s + 100 * m + rank)
            ids = torch.randint(0, cfg.vocab_size, (args.micro_batch, args.seq), generator=g).to(device)
            micro.append((ids, ids))
        steps.append(micro)
    return steps


class Clock:
    """CUDA events on GPU; a host clock on CPU (the CPU path only smoke-tests this script)."""

    def __init__(self, device) -> None:
        self.cuda = device.type == "cuda"

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()

    def mark(self):
        if self.cuda:
            ev = torch.cuda.Event(enable_timing=True)
            ev.record()
            return ev
        return time.perf_counter()

    def ms(self, a, b) -> float:
        return a.elapsed_time(b) if self.cuda else (b - a) * 1000

    def reset_peak(self) -> None:
        if self.cuda:
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()

    def peaks(self) -> tuple[float, float]:
        if self.cuda:
            return torch.cuda.max_memory_allocated() / GiB, torch.cuda.max_memory_reserved() / GiB
        return 0.0, 0.0


def measure(name, args, cfg, world, rank, device, batches) -> dict:
    clock = Clock(device)
    clock.reset_peak()
    t0 = time.perf_counter()
    model = build(cfg, device)
    step, keep = SYSTEMS[name](model, args, world)
    if args.activation_checkpointing:
        checkpoint_layers(model)
    clock.sync()
    setup_s = time.perf_counter() - t0
    gc.collect()
    clock.reset_peak()
    losses, marks = [], []
    for i, micro in enumerate(batches):
        if i == args.warmup:
            clock.sync()
            wall0 = time.perf_counter()
        phase = {"start": clock.mark()}
        losses.extend(step(micro, lambda label: phase.__setitem__(label, clock.mark())))
        phase["end"] = clock.mark()
        marks.append(phase)
    clock.sync()
    wall = (time.perf_counter() - wall0) / args.steps
    timed = marks[args.warmup :]
    step_ms = [clock.ms(m["start"], m["end"]) for m in timed]
    # Phases of the last micro batch on the main stream (the whole step when --grad-accum is 1).
    phases = {
        "fwd_ms": statistics.median(clock.ms(m["start"], m["fwd"]) for m in timed),
        "bwd_ms": statistics.median(clock.ms(m["fwd"], m["bwd"]) for m in timed),
        "opt_ms": statistics.median(clock.ms(m["bwd"], m["end"]) for m in timed),
    }
    med = statistics.median(step_ms) / 1000
    tokens = args.micro_batch * args.seq * args.grad_accum * world
    alloc, reserved = clock.peaks()
    sync_wall = sync_each_step(step, batches[args.warmup :], clock) if args.sync_each_step else None
    if name in args.profile.split(","):
        profile(step, batches[-2:], clock)
    out = {
        "system": name + ("+ac" if args.activation_checkpointing else ""),
        "world_size": world,
        "seq": args.seq,
        "micro_batch": args.micro_batch,
        "grad_accum": args.grad_accum,
        "layers": cfg.num_hidden_layers,
        "params": L.param_count(cfg),
        "step_s_median": med,
        "step_s_wall_mean": wall,
        "step_ms_all": [round(x, 2) for x in step_ms],
        **{k: round(v, 2) for k, v in phases.items()},
        "tokens_per_s": tokens / med,
        "tflops_per_gpu": flops_per_token(cfg, args.seq) * tokens / med / world / 1e12,
        "peak_alloc_gib": alloc,
        "peak_reserved_gib": reserved,
        "losses": [round(float(x), 5) for x in losses[: args.show_losses]],
        "plan": getattr(args, "plan", None) if name.startswith("zgen") else None,
        "setup_s": setup_s,
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name() if clock.cuda else "cpu",
    }
    if sync_wall is not None:
        out["step_s_wall_sync_median"] = sync_wall
        out["tokens_per_s_wall_sync"] = tokens / sync_wall
    del step, keep, model
    gc.collect()
    clock.reset_peak()
    return out


def sync_each_step(step, batches, clock) -> float:
    """Median host wall time of steps that each end by reading their loss (`.item()`), as a script's loop does."""
    times = []
    for micro in batches:
        t0 = time.perf_counter()
        losses = step(micro, lambda label: None)
        float(sum(loss.float() for loss in losses))
        times.append(time.perf_counter() - t0)
    clock.sync()
    return statistics.median(times)


def profile(step, batches, clock) -> None:
    """Top kernels by GPU time over a few more steps (printed; the reply keeps only the output's tail)."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if clock.cuda else [])
    with torch_profile(activities=acts) as prof:
        for micro in batches:
            step(micro, lambda label: None)
        clock.sync()
    for key in ("self_device_time_total", "self_cuda_time_total", "self_cpu_time_total"):
        try:
            print(prof.key_averages().table(sort_by=key, row_limit=18, max_name_column_width=60), flush=True)
            return
        except Exception:
            continue


# -- GPU correctness checks (tiny model) ------------------------------------------------------------

def check(device, world: int, rank: int) -> list[str]:
    """On the tiny Llama: zgen fp32 vs plain AdamW on the global batch; zgen bf16 variants vs FSDP2 bf16.

    Every rank computes the plain reference on the whole global batch; the
    sharded systems see their own micro batches. Lines are for rank 0.
    """
    lines = []
    steps, mb, seq = 3, 2, 64
    tiny = L.build_tiny_model().config

    def global_batch(step, accum):
        g = torch.Generator().manual_seed(500 + step)
        return torch.randint(0, tiny.vocab_size, (world * accum * mb, seq), generator=g).to(device)

    def mine(ids, micro):
        i = (micro * world + rank) * mb
        return ids[i : i + mb]

    def run_zgen(cfg, accum, compiled=False, save_at: tuple[int, str] | None = None, resume_from=None,
                 recompute=None, frozen=False, **kw):
        model = build(tiny, device)
        if frozen:
            freeze_some(model)
        engine = zr.initialize(model, dict(cfg, train_micro_batch_size_per_gpu=mb), **kw)
        if compiled:
            engine.compile()
        if recompute:
            checkpoint_layers(model, reentrant=recompute == "reentrant")
        if resume_from:
            engine.load_checkpoint(resume_from)
        for s in range(engine.global_steps, steps):
            if save_at and s == save_at[0]:
                engine.save_checkpoint(save_at[1])
            ids = global_batch(s, accum)
            for m in range(accum):
                part = mine(ids, m)
                engine.backward(engine(part, part))
                engine.step()
        return engine.full_state_dict()

    def worst(full, want):
        return max((full[k] - want[k]).abs().max().item() for k in want) if rank == 0 else 0.0

    def plain_adamw(frozen=False):
        ref = build(tiny, device)
        if frozen:
            freeze_some(ref)
        trained = [q for q in ref.parameters() if q.requires_grad]
        opt = seed_adamw(trained)
        for s in range(steps):
            ids = global_batch(s, 2)
            ref(ids, ids).backward()
            clip_and_step(trained, opt)
        return {k: v.detach().cpu() for k, v in ref.state_dict().items()}

    fp32 = dict(zgen_config(2), bf16={"enabled": False})
    for frozen in (False, True):
        what = "with the embedding and layer 0 frozen " if frozen else ""
        lines.append(f"check fp32 zgen vs plain AdamW {what}(tiny, world {world}, {steps} steps, accum 2): "
                     f"max |diff| {worst(run_zgen(fp32, 2, frozen=frozen), plain_adamw(frozen)):.2e}")
    fp32_offload = dict(zgen_config(2, offload=True), bf16={"enabled": False})
    lines.append(f"check fp32 zgen offload_optimizer (pinned host, CPU fused AdamW) vs plain AdamW (tiny, world {world}, "
                 f"{steps} steps, accum 2): max |diff| {worst(run_zgen(fp32_offload, 2), plain_adamw()):.2e}")
    fp32_param = dict(zgen_config(2, offload="param"), bf16={"enabled": False})
    lines.append(f"check fp32 zgen offload_param + offload_optimizer (bf16 shards on the host, copied up per unit) "
                 f"vs plain AdamW (tiny, world {world}, {steps} steps, accum 2): "
                 f"max |diff| {worst(run_zgen(fp32_param, 2), plain_adamw()):.2e}")
    bf16_param = run_zgen(zgen_config(1, offload="param"), 1)
    bf16_opt = run_zgen(zgen_config(1, offload=True), 1)
    lines.append(f"check bf16 zgen offload_param vs offload_optimizer alone (tiny, world {world}): "
                 f"max |diff| {worst(bf16_param, bf16_opt):.2e}")
    plain = run_zgen(zgen_config(1), 1)
    for recompute, compiled in (("non-reentrant", False), ("reentrant", False), ("non-reentrant", True)):
        full = run_zgen(zgen_config(1), 1, recompute=recompute, compiled=compiled)
        lines.append(f"check bf16 per-layer activation checkpointing ({recompute}{', compiled' if compiled else ''}) "
                     f"vs none (tiny, world {world}): max |diff| {worst(full, plain):.2e}")
    # sharded checkpoint on the GPU: save after step 2 (while training on), resume in a new engine, finish
    ckpt = os.path.join(tempfile.mkdtemp(prefix="zgen_check_") if rank == 0 else "", "ckpt")
    holder = [ckpt]
    dist.broadcast_object_list(holder)  # one directory for all ranks (one node)
    whole = run_zgen(zgen_config(1), 1, save_at=(2, holder[0]))
    resumed = run_zgen(zgen_config(1), 1, resume_from=holder[0])
    lines.append(f"check bf16 checkpoint after step 2 -> new engine -> step 3 vs uninterrupted (tiny, world {world}): "
                 f"max |diff| {worst(resumed, whole):.2e}")
    for accum in (1, 2):
        fsdp = _fsdp2_tiny(tiny, device, steps, accum, lambda s: [mine(global_batch(s, accum), m) for m in range(accum)])
        for label, kw in (("bf16 split (default)", {}), ("bf16 fp32-master", {"split_master": False}),
                          ("bf16 keep", {"keep_low_precision": True}), ("bf16 split compiled", {"compiled": True})):
            full = run_zgen(zgen_config(accum), accum, **kw)
            lines.append(f"check {label} zgen vs FSDP2 bf16 (tiny, world {world}, {steps} steps, accum {accum}): "
                         f"max |diff| {worst(full, fsdp):.2e}")
    lines.extend(check_split_kernel(device))
    return lines


def check_split_kernel(device) -> list[str]:
    """The Triton split-master AdamW against the same update in torch operations, on random data."""
    from zgen.runtime import split

    if device.type != "cuda" or not split.triton_available():
        return ["check split kernel: skipped (no CUDA Triton here)"]
    lines = []
    g = torch.Generator(device=device).manual_seed(7)
    n = 1_000_003
    x = torch.randn(n, generator=g, device=device) * 0.05
    for gdtype in (torch.bfloat16, torch.float32):
        outs = []
        for use_triton in (True, False):
            hi = torch.empty(n, dtype=torch.bfloat16, device=device)
            lo = torch.empty(n, dtype=torch.int16, device=device)
            split.encode(x, hi, lo)
            m = torch.randn(n, generator=torch.Generator(device=device).manual_seed(8), device=device) * 1e-3
            v = torch.rand(n, generator=torch.Generator(device=device).manual_seed(9), device=device) * 1e-6
            grad = (torch.randn(n, generator=torch.Generator(device=device).manual_seed(10), device=device) * 1e-2).to(gdtype)
            scale = torch.tensor(2.5, device=device)
            saved = split._TRITON
            if not use_triton:
                split._TRITON = False
            split.adamw_step(hi, lo, m, v, grad, scale, step=3, lr=3e-4, beta1=0.9, beta2=0.95, eps=1e-8,
                             weight_decay=0.1, decoupled=True)
            split._TRITON = saved
            outs.append((split.decode(hi, lo), m, v))
        (xa, ma, va), (xb, mb, vb) = outs
        rel = lambda a, b: ((a - b).abs().max() / b.abs().max()).item()  # noqa: E731
        lines.append(f"check split kernel ({gdtype}): max rel diff weights {rel(xa, xb):.1e}, "
                     f"exp_avg {rel(ma, mb):.1e}, exp_avg_sq {rel(va, vb):.1e}, NaN {bool(torch.isnan(xa).any())}")
    return lines


def _fsdp2_tiny(tiny, device, steps, accum, micro_batches):
    model = build(tiny, device)
    fsdp2_shard(model)
    opt = seed_adamw(model.parameters())
    for s in range(steps):
        for part in micro_batches(s):
            (model(part, part) / accum).backward()
        clip_and_step(model.parameters(), opt)
    return {k: v.full_tensor().detach().cpu() for k, v in model.state_dict().items()}


# -- main -------------------------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--systems", default="plain,fsdp2,zgen,zgen-fp32master,zgen-keep,deepspeed")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--seq", type=int, default=8192)
    ap.add_argument("--micro-batch", type=int, default=1)
    ap.add_argument("--grad-accum", type=int, default=1)
    ap.add_argument("--layers", type=int, default=None, help="override the layer count (smaller smoke runs)")
    ap.add_argument("--shape", choices=sorted(SHAPES), default="1b", help="Llama-3.2 shape of the model")
    ap.add_argument("--tiny", action="store_true", help="the tiny Llama (with --device cpu: a smoke test of this script)")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--show-losses", type=int, default=4)
    ap.add_argument("--plan", default=None, help="zgen systems run this `zgen plan --json` file (default: the runtime's plan)")
    ap.add_argument("--sync-each-step", action="store_true",
                    help="also time --steps more steps by host wall clock, each ending in a `.item()` of its loss")
    ap.add_argument("--profile", default="", help="comma-separated systems to profile for two extra steps")
    ap.add_argument("--check", action="store_true", help="run the GPU correctness checks first")
    ap.add_argument("--activation-checkpointing", action="store_true",
                    help="recompute each decoder layer in backward (non-reentrant torch.utils.checkpoint), every system")
    ap.add_argument("--out", default=None, help="JSON lines file (default $OUT/runtime_bench.jsonl)")
    ap.add_argument("--summarize", metavar="JSONL", help="print the table and ratios of earlier runs' results, then exit")
    args = ap.parse_args(argv)
    if args.summarize:
        results = [json.loads(line) for line in Path(args.summarize).read_text().splitlines() if line.strip()]
        print_table(results, args, max((r.get("world_size", 1) for r in results), default=1))
        return 0

    if "RANK" not in os.environ:  # alone: a one-rank group so FSDP2 and DeepSpeed can run
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    job = zr.init_distributed(device=args.device)
    world, rank, device = job.world_size, job.rank, job.device
    cfg = L.build_tiny_model().config if args.tiny else L.LlamaConfig(**SHAPES[args.shape])
    if args.layers is not None:
        cfg.num_hidden_layers = args.layers
    out_path = args.out or (os.path.join(os.environ["OUT"], "runtime_bench.jsonl") if "OUT" in os.environ else None)

    notes = check(device, world, rank) if args.check else []
    for line in notes:
        if rank == 0:
            print(line, flush=True)
    batches = data(args, cfg, rank, device)
    results = []
    for name in [n for n in args.systems.split(",") if n != "none"]:
        try:
            res = measure(name, args, cfg, world, rank, device, batches)
        except Exception as e:  # one system failing (e.g. DeepSpeed missing) must not lose the others
            import traceback

            traceback.print_exc()
            res = {"system": name, "error": f"{type(e).__name__}: {e}"[:500]}
            gc.collect()
            Clock(device).reset_peak()
        results.append(res)
        if rank == 0:
            print(json.dumps(res), flush=True)
            if out_path:
                with open(out_path, "a") as f:
                    f.write(json.dumps(res) + "\n")
    if rank == 0:
        print_table(results, args, world)
    dist.barrier()
    zr.shutdown()
    return 0


def print_table(results: list[dict], args, world: int) -> None:
    ok = {r["system"]: r for r in results if "error" not in r}
    first = next(iter(ok.values()), None)
    if first is None:
        print("no system ran")
        return
    print(f"\nLlama shape ({first['params'] / 1e9:.2f}B parameters), seq {first['seq']}, micro batch {first['micro_batch']}, accum {first['grad_accum']}, "
          f"world {world}, median of {len(first['step_ms_all'])} steps after warm-up")
    print(f"{'system':<15} {'step ms':>8} {'fwd/bwd/opt ms':>17} {'tok/s':>9} {'TFLOP/s':>8} {'alloc GiB':>10} "
          f"{'resv GiB':>9}  first losses")
    for r in results:
        if "error" in r:
            print(f"{r['system']:<15} error: {r['error'][:100]}")
            continue
        split = f"{r['fwd_ms']:.0f}/{r['bwd_ms']:.0f}/{r['opt_ms']:.0f}"
        print(f"{r['system']:<15} {r['step_s_median'] * 1000:8.1f} {split:>17} {r['tokens_per_s']:9.0f} {r['tflops_per_gpu']:8.1f} "
              f"{r['peak_alloc_gib']:10.2f} {r['peak_reserved_gib']:9.2f}  {r['losses']}")
        if "tokens_per_s_wall_sync" in r:
            print(f"{'':<15} with a .item() per step, host wall clock: {r['step_s_wall_sync_median'] * 1000:.1f} ms, "
                  f"{r['tokens_per_s_wall_sync']:.0f} tok/s")
    for z in [name for name in ok if name.startswith("zgen")]:
        for other in [name for name in ok if not name.startswith("zgen")]:
            mem = ok[z]["peak_alloc_gib"] / ok[other]["peak_alloc_gib"] if ok[other]["peak_alloc_gib"] else float("nan")
            print(f"{z} / {other}: tokens/s x{ok[z]['tokens_per_s'] / ok[other]['tokens_per_s']:.3f}, "
                  f"peak alloc x{mem:.3f}")


if __name__ == "__main__":
    raise SystemExit(main())
