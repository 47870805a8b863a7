"""What is live on the GPU at a system's peak: one step traced by torch's memory history, grouped by source line.

    torchrun --nproc_per_node 2 bench/memory_peak.py --system zgen [--micro-batch 1] [--out peaks.jsonl]

After `--warmup` steps (so every lazily made buffer exists), memory history
is recorded for one step. The trace is replayed to find the moment the
allocated bytes peak; the blocks live then are grouped by the innermost
Python frame of their allocation that lies in zgen, torch.distributed,
torch.optim, autograd or the model file (else the innermost frame), and
the groups are printed biggest first. Blocks allocated before the traced
step (shards, optimizer state, the model's buffers) are one "before the
step" figure. Rank 0 prints and writes; every rank traces its own GPU.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parent))
import multi_gpu as mg  # noqa: E402
import runtime_bench as rb  # noqa: E402

import zgen.runtime as zr  # noqa: E402

_INTERESTING = ("zgen/", "torch/distributed/", "torch/optim/", "torch/autograd/", "examples/llama/", "torch/utils/checkpoint")


def _where(frames: list[dict]) -> str:
    for f in frames:  # innermost first
        if any(part in f["filename"] for part in _INTERESTING):
            name = f["filename"].split("site-packages/")[-1]
            return f"{name}:{f['line']} {f['name']}"
    if frames:
        f = frames[0]
        return f"{f['filename'].rsplit('/', 1)[-1]}:{f['line']} {f['name']}"
    return "<no python frame>"


def peak_groups(trace: list[dict]) -> tuple[int, dict[str, int]]:
    """(the traced step's peak of newly allocated bytes, those bytes by allocation site)."""
    live: dict[int, dict] = {}
    total = best = best_at = 0
    for i, ev in enumerate(trace):
        if ev["action"] == "alloc":
            live[ev["addr"]] = ev
            total += ev["size"]
            if total > best:
                best, best_at = total, i
        elif ev["action"] == "free_completed" and ev["addr"] in live:
            total -= live.pop(ev["addr"])["size"]
    live.clear()
    for ev in trace[: best_at + 1]:
        if ev["action"] == "alloc":
            live[ev["addr"]] = ev
        elif ev["action"] == "free_completed":
            live.pop(ev["addr"], None)
    groups: dict[str, int] = {}
    for ev in live.values():
        key = _where(ev.get("frames", []))
        groups[key] = groups.get(key, 0) + ev["size"]
    return best, groups


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--system", required=True, choices=sorted(rb.SYSTEMS))
    ap.add_argument("--micro-batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=8192)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--top", type=int, default=14)
    ap.add_argument("--plan", default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    args.grad_accum = 1
    job = zr.init_distributed()
    world, rank, device = job.world_size, job.rank, job.device
    cfg = rb.L.LlamaConfig()
    model = rb.build(cfg, device)
    step, keep = rb.SYSTEMS[args.system](model, args, world)
    data = mg.batches(cfg, args.warmup + 1, args.micro_batch, args.seq, rank, world, device)
    for micro in data[: args.warmup]:
        step(micro, lambda label: None)
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.memory._record_memory_history(max_entries=1_000_000, stacks="python")
    step(data[-1], lambda label: None)
    torch.cuda.synchronize()
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    peak_stat = torch.cuda.max_memory_allocated()
    trace = snap["device_traces"][torch.cuda.current_device()]
    best, groups = peak_groups(trace)
    top = sorted(groups.items(), key=lambda kv: -kv[1])[: args.top]
    rec = {"system": args.system, "world_size": world, "micro_batch": args.micro_batch, "seq": args.seq,
           "before_step_gib": before / rb.GiB, "traced_peak_gib": (before + best) / rb.GiB,
           "max_allocated_gib": peak_stat / rb.GiB, "events": len(trace),
           "at_peak_gib": {k: round(v / rb.GiB, 4) for k, v in top}}
    if rank == 0:
        print(f"== {args.system} world {world} mb {args.micro_batch}: before the step {before / rb.GiB:.3f} GiB, "
              f"peak {peak_stat / rb.GiB:.3f} GiB (traced {rec['traced_peak_gib']:.3f}), {len(trace)} events")
        for k, v in top:
            print(f"  {v / rb.GiB:8.3f} GiB  {k}")
        if args.out:
            with open(args.out, "a") as f:
                f.write(json.dumps(rec) + "\n")
    del step, keep, model
    dist.barrier()
    zr.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
