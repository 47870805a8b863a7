"""`zgen plan --auto` on one GPU: its predictions against measurements, and the baselines' best hand setting.

    python bench/auto_bench.py --budgets 40,80 --batch 4            # 1B shape, seq 8192: auto vs FSDP2's grid
    python bench/auto_bench.py --shape 8b --layers 16 --budgets 40 --batch 2 --top 0 --baselines deepspeed-offload-ac1
    python bench/auto_bench.py --tiny --device cpu --seq 64 --budgets 1 --batch 2   # smoke test of this script
    python bench/auto_bench.py --summarize results.jsonl
    python bench/auto_bench.py --shape 8b --layers 16 --budgets 40 --batch 2 --rank 2 --baselines none \
        --rates rates.json   # one setting per process, bench/offload_rates.py's host rates

For each budget the search runs in this process exactly as `zgen plan --auto`
does (`zgen.plan.auto.search` over the meta-device trace of
examples/llama/model.py and the planner's plan, bf16, AdamW, H200 rates,
5% margin); then the `--top` best settings that fit are run with
`zgen.runtime` (units compiled, `engine.compile()`), the plan carrying the
chosen recomputation and fused loss, the config its micro batch, accumulation
and offload, under `torch.cuda.set_per_process_memory_fraction(budget)`: an
out-of-memory there is a failed prediction. Each row records the predicted
step and peak next to the measured median step (CUDA events) and peak
allocated bytes (`torch.cuda.max_memory_allocated`, states included).

Baselines (`--baselines`): FSDP2 compiled (runtime_bench's `fsdp2-compile`) over
{no AC, AC on every block, AC on every other block} x every micro batch that
divides `--batch` (accumulation makes up the rest), each run once without a
cap; a setting fits a budget when its peak allocated is within it (generous
to FSDP2: the allocator's reserve is not counted). `deepspeed-offload` and
`deepspeed-offload-param`: DeepSpeed 0.19.8 ZeRO-3 with optimizer (and
parameter) offload (its CPU Adam), at each micro batch under the budget's cap;
`-ac1` adds activation checkpointing on every block.

Every configuration runs in this one process in turn; dynamo's caches are
reset between them (`--rank K` runs only the K-th setting, so that each can
have a fresh process). `--rates` takes `bench/offload_rates.py`'s measured
host update and host-link rates in place of the H200 defaults.
`--gradient-clipping 0` runs every system without clipping (the seed config
clips at 1.0, and a clipped step needs every gradient's norm before any
update, so zgen's offloaded updates then wait for the backward's end; without
it they start during the backward). One JSON line per run to --out.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import os
import socket
import sys
import tempfile
import time
from pathlib import Path

# As the emitted script does (templates/train.py.j2), for every system: run g's partial offload ran out of memory to
# fragmentation at 40 GiB on one machine without it (bench/NOTES.md).
os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import runtime_bench as rb  # noqa: E402  (also puts the repository on sys.path)

import zgen.runtime as zr  # noqa: E402
from zgen.config.resolved import ZeroSpec  # noqa: E402
from zgen.plan import auto  # noqa: E402
from zgen.plan import trace as tr  # noqa: E402
from zgen.plan.planner import build_plan, unit_numel  # noqa: E402
from zgen.plan.target import Target  # noqa: E402

GiB = rb.GiB
T0 = time.monotonic()
# Llama-3.1-8B's shape (untied head); --layers may cut its depth to fit the host memory offload needs.
rb.SHAPES.setdefault("8b", {"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
                            "num_key_value_heads": 8, "intermediate_size": 14336, "tie_word_embeddings": False})


def rates(args):
    """The H200 rates, with --rates' measured host update and copy rates in place of the defaults."""
    if not args.rates:
        return auto.H200
    m = json.loads(Path(args.rates).read_text())
    return dataclasses.replace(auto.H200, name="H200 (host rates measured)", d2h_bytes=m["d2h_bytes"],
                               h2d_bytes=m["h2d_bytes"], host_update_params=m["host_update_params"])


def search(cfg, args, budget: int):
    """`zgen plan --auto`'s search for this model shape and budget (world size 1)."""
    model = tr.build_meta_model(lambda: rb.L.LlamaForCausalLM(cfg), Target("examples/llama/model.py", "LlamaForCausalLM", "--model"))
    trace = tr.trace_model(model, root=rb.REPO, batch_size=1, seq_len=args.seq, dtype="bfloat16")
    plan = build_plan(model, trace, ZeroSpec(stage=3, param_persistence_threshold=100_000), world_size=1)
    heads = tr.fused_heads(model, trace)
    sizes = {p.name: p.numel for p in trace.params}
    result = auto.search(plan, trace.costs, unit_numel(plan, trace), trace_batch=1, params=trace.total_params,
                         persistent=sum(sizes[p] for p in plan.persistent), train_batch_size=args.batch, world_size=1,
                         seq_len=args.seq, precision="bf16", adam=True, budget=budget, heads=heads,
                         vocab_hidden=(cfg.vocab_size, cfg.hidden_size), rates=rates(args),
                         clipping=rb.SEED_CONFIG.get("gradient_clipping", 0) > 0)  # the config every setting runs
    return plan, result


def checkpoint_every(model, every: int) -> None:
    """Activation checkpointing on every `every`-th decoder block (1: all of them), as a user would add it."""
    for i, layer in enumerate(model.layers):
        if i % every == 0:
            layer.forward = rb.functools.partial(rb.checkpoint, layer.forward, use_reentrant=False)


def fsdp2_ac(every: int):
    def setup(model, args, world):
        step, keep = rb.setup_fsdp2(model, args, world, compiled=args.device == "cuda")
        if every:
            checkpoint_every(model, every)
        return step, keep
    return setup


def deepspeed_ac(offload):
    """DeepSpeed with offload and activation checkpointing on every block (what fits its activations in a budget)."""
    def setup(model, args, world):
        step, keep = rb.setup_deepspeed(model, args, world, offload=offload)
        checkpoint_every(model, 1)
        return step, keep
    return setup


def zgen_auto(offload):
    return lambda m, a, w: rb.setup_zgen(m, a, w, compiled=a.device == "cuda", offload=offload)


rb.SYSTEMS.update({
    "fsdp2-compile-noac": fsdp2_ac(0), "fsdp2-compile-ac1": fsdp2_ac(1), "fsdp2-compile-ac2": fsdp2_ac(2),
    "deepspeed-offload-ac1": deepspeed_ac(True), "deepspeed-offload-param-ac1": deepspeed_ac("param"),
    "zgen-auto": zgen_auto(False), "zgen-auto-offload": zgen_auto(True), "zgen-auto-offload-param": zgen_auto("param"),
})


def run(name: str, args, cfg, device, cap: int | None, extra: dict) -> dict:
    """One configuration through runtime_bench's `measure`, out-of-memory caught; `cap` bytes for the allocator."""
    if time.monotonic() - T0 > args.deadline:
        print(f"SKIPPED (past --deadline {args.deadline:.0f} s): {name} mb {args.micro_batch} {extra}", flush=True)
        return {}
    torch._dynamo.reset()
    if device.type == "cuda":
        total = torch.cuda.get_device_properties(0).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, (cap or total) / total))
    batches = rb.data(args, cfg, 0, device)
    try:
        res = rb.measure(name, args, cfg, 1, 0, device, batches)
    except torch.OutOfMemoryError as e:
        res = {"system": name, "micro_batch": args.micro_batch, "grad_accum": args.grad_accum,
               "error": f"OutOfMemoryError: {str(e)[:200]}"}
    except Exception as e:  # one configuration failing must not lose the others
        import traceback

        traceback.print_exc()
        res = {"system": name, "micro_batch": args.micro_batch, "grad_accum": args.grad_accum,
               "error": f"{type(e).__name__}: {e}"[:500]}
    del batches
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
    res.update(extra)
    res.pop("step_ms_all", None) if "error" in res else None
    print(json.dumps(res), flush=True)
    if args.out:
        with open(args.out, "a") as f:
            f.write(json.dumps(res) + "\n")
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", choices=sorted(rb.SHAPES), default="1b")
    ap.add_argument("--layers", type=int, default=None)
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--seq", type=int, default=8192)
    ap.add_argument("--budgets", default="40,80", help="GiB per GPU, comma-separated")
    ap.add_argument("--batch", type=int, default=4, help="sequences per optimizer step (the global batch at world 1)")
    ap.add_argument("--top", type=int, default=3, help="how many of the best fitting settings to measure")
    ap.add_argument("--rank", type=int, default=0, help="measure only this one of the best fitting settings")
    ap.add_argument("--rates", default="", help="bench/offload_rates.py's JSON: measured host rates")
    ap.add_argument("--baselines", default="fsdp2", help="fsdp2, deepspeed-offload, deepspeed-offload-param, none")
    ap.add_argument("--baseline-micro-batches", default="", help="only these micro batches for the baselines")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--deadline", type=float, default=1e9, help="seconds after which no configuration starts")
    ap.add_argument("--gradient-clipping", type=float, default=None, metavar="NORM",
                    help="the config's gradient_clipping for every system (default: the seed config's; 0 turns it off, "
                         "so that zgen's offloaded updates start during the backward)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--summarize", metavar="JSONL")
    args = ap.parse_args(argv)
    if args.summarize:
        summarize([json.loads(x) for x in Path(args.summarize).read_text().splitlines() if x.strip()])
        return 0
    if args.gradient_clipping is not None:  # zgen's, DeepSpeed's and FSDP2's configs are copies of the seed's
        rb.SEED_CONFIG["gradient_clipping"] = args.gradient_clipping
    args.out = args.out or (os.path.join(os.environ["OUT"], "auto_bench.jsonl") if "OUT" in os.environ else None)
    # runtime_bench.measure's other knobs
    args.activation_checkpointing, args.profile, args.sync_each_step, args.show_losses = False, "", False, 3
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    job = zr.init_distributed(device=args.device)
    device = job.device
    torch._dynamo.config.cache_size_limit = 64
    cfg = rb.L.build_tiny_model().config if args.tiny else rb.L.LlamaConfig(**rb.SHAPES[args.shape])
    if args.layers is not None:
        cfg.num_hidden_layers = args.layers
    label = "tiny" if args.tiny else args.shape + (f"-{args.layers}l" if args.layers else "")
    budgets = [int(float(b) * GiB) for b in args.budgets.split(",")]
    divisors = [d for d in range(1, args.batch + 1) if args.batch % d == 0]
    if args.baseline_micro_batches:
        divisors = [int(x) for x in args.baseline_micro_batches.split(",")]
    tmp = Path(tempfile.mkdtemp())
    for budget in budgets:
        plan, result = search(cfg, args, budget)
        print("\n".join(auto.lines(result)), flush=True)
        for rank, s in enumerate(result.fitting[: max(args.top, args.rank)], 1):
            if args.rank and rank != args.rank:
                continue
            c = s.candidate
            path = tmp / f"plan_{budget}_{rank}.json"
            path.write_text(auto.apply(plan, result, s).to_json())
            args.plan, args.micro_batch, args.grad_accum = str(path), c.micro_batch, c.accumulation
            args.offload_ratio = c.offload_ratio
            name = "zgen-auto" + ("-offload-param" if c.offload_param else "-offload" if c.offload_optimizer else "")
            run(name, args, cfg, device, budget, {
                "label": label, "budget_gib": budget / GiB, "auto_rank": rank, "setting": c.describe(result.blocks),
                "predicted_step_s": s.step.total, "predicted_peak_gib": s.peak.total / GiB,
                "predicted_tokens_per_s": s.tokens_per_s})
        args.plan, args.offload_ratio = None, 1.0
        for base in [b for b in args.baselines.split(",") if b.startswith("deepspeed")]:
            for mb in divisors:
                args.micro_batch, args.grad_accum = mb, args.batch // mb
                run(base, args, cfg, device, budget, {"label": label, "budget_gib": budget / GiB, "baseline": base})
    if "fsdp2" in args.baselines.split(","):  # once, uncapped: a setting fits a budget when its peak is within it
        args.plan = None
        for ac in ("noac", "ac2", "ac1"):
            for mb in sorted(divisors, reverse=True):
                args.micro_batch, args.grad_accum = mb, args.batch // mb
                run(f"fsdp2-compile-{ac}", args, cfg, device, None, {"label": label, "baseline": "fsdp2"})
    zr.shutdown()
    if args.out:
        summarize([json.loads(x) for x in Path(args.out).read_text().splitlines() if x.strip()])
    return 0


def summarize(rows: list[dict]) -> None:
    """Per label and budget: the auto rows (predicted vs measured), the baselines' best that fits, the ratio."""
    ok = [r for r in rows if "error" not in r]
    for label in dict.fromkeys(r.get("label") for r in rows):
        budgets = sorted({r["budget_gib"] for r in rows if r.get("label") == label and "budget_gib" in r})
        for b in budgets:
            print(f"\n{label}, budget {b:.0f} GiB")
            autos = sorted((r for r in rows if r.get("label") == label and r.get("budget_gib") == b and "auto_rank" in r),
                           key=lambda r: r["auto_rank"])
            for r in autos:
                if "error" in r:
                    print(f"  auto #{r['auto_rank']} {r['setting']}: {r['error'][:80]}")
                    continue
                print(f"  auto #{r['auto_rank']} {r['setting']}: step {r['step_s_median'] * 1e3:.1f} ms "
                      f"(predicted {r['predicted_step_s'] * 1e3:.1f}, {r['predicted_step_s'] / max(r['step_s_median'], 1e-12) - 1:+.1%}), "
                      f"{r['tokens_per_s']:,.0f} tok/s, peak {r['peak_alloc_gib']:.2f} GiB "
                      f"(predicted {r['predicted_peak_gib']:.2f}, {r['predicted_peak_gib'] / max(r['peak_alloc_gib'], 1e-12) - 1:+.1%}), "
                      f"reserved {r['peak_reserved_gib']:.2f}")
            measured = [r for r in autos if "error" not in r]
            order = [r["auto_rank"] for r in sorted(measured, key=lambda r: r["step_s_median"])]
            print(f"  measured order of the predicted top {len(measured)}: {order}")
            base = [r for r in ok if r.get("label") == label and r.get("baseline")
                    and (r.get("budget_gib") == b or ("budget_gib" not in r and r["peak_alloc_gib"] <= b))]
            for kind in dict.fromkeys(r["baseline"] for r in base):
                best = max((r for r in base if r["baseline"] == kind), key=lambda r: r["tokens_per_s"])
                print(f"  {kind} best that fits: {best['system']} mb {best['micro_batch']} x{best['grad_accum']}: "
                      f"{best['tokens_per_s']:,.0f} tok/s, peak {best['peak_alloc_gib']:.2f} GiB")
                if measured:
                    print(f"  auto #1 / {kind} best: x{measured[0]['tokens_per_s'] / best['tokens_per_s']:.3f}"
                          if measured[0]["auto_rank"] == 1 else "  auto #1 did not run")
    fs = [r for r in rows if r.get("baseline") == "fsdp2"]
    if fs:
        print("\nFSDP2 compiled grid (uncapped)")
        for r in fs:
            tail = r["error"][:60] if "error" in r else (f"{r['step_s_median'] * 1e3:.1f} ms, {r['tokens_per_s']:,.0f} tok/s, "
                                                        f"peak {r['peak_alloc_gib']:.2f} GiB, reserved {r['peak_reserved_gib']:.2f}")
            print(f"  {r['system']} mb {r['micro_batch']} x{r['grad_accum']}: {tail}")


if __name__ == "__main__":
    raise SystemExit(main())
