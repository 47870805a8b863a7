"""One system of the multi-GPU comparison (issue 6), run under torchrun; bench/gpu_run.sh runs them all.

    torchrun --nproc_per_node N bench/multi_gpu.py --system zgen --plan bench/plans/llama1b_wN_seq8192.json
    torchrun --nproc_per_node N bench/multi_gpu.py --system fsdp2 | fsdp2-prefetch | deepspeed
    python bench/multi_gpu.py --summarize results.jsonl      # the table, loss agreement and targets

Systems and their settings are runtime_bench.py's (same model, weights, AdamW
settings, clipping, DeepSpeed seed config with torch's fused AdamW). One
process group per system, so peaks and failures stay separate. Phases, each
written as one JSON line as soon as it ends:

* ``mb1``: micro batch 1, accumulation 1, `--loss-steps` steps on a learnable
  task (counting sequences) from the same weights: the global mean loss of
  every step (loss agreement), and the median step time of the steps after
  `--warmup`; then `--profile-steps` steps under torch.profiler for the share
  of time communication is exposed (see `exposed_comm`).
* ``probe``: micro batch 2 for a few steps; the peak reserved memory at 1 and
  2 predicts the largest micro batch under `--mem-target` of the GPU.
* ``max``: that micro batch and upwards until one runs out of memory (then
  down, after a rebuild, if the prediction itself does not fit); the largest
  one that ran is timed and profiled again.

The same engine serves all micro batch sizes of a system (none of them checks
the batch size; DeepSpeed's `train_micro_batch_size_per_gpu` only feeds its
monitors). An out-of-memory step leaves the engine in an unknown state, so it
is dropped and, if needed, rebuilt.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parent))
import runtime_bench as rb  # noqa: E402  (also puts the repository on sys.path)

import zgen.runtime as zr  # noqa: E402

GiB = rb.GiB


# -- data -------------------------------------------------------------------------------------------

def batches(cfg, steps: int, mb: int, seq: int, rank: int, world: int, device, first_step: int = 0):
    """`steps` micro batches of counting sequences (start + stride * position, mod vocabulary).

    Step s, rank r gets rows [r * mb, (r + 1) * mb) of a global batch drawn from s
    alone, so every system (and world size) sees the same tokens; made on the device
    before timing so no host-to-device copy syncs the timed loop.
    """
    out = []
    for s in range(first_step, first_step + steps):
        g = torch.Generator().manual_seed(1_000_003 + s)
        start = torch.randint(0, cfg.vocab_size, (world * mb, 1), generator=g)
        stride = torch.randint(1, 4, (world * mb, 1), generator=g)
        ids = (start + stride * torch.arange(seq)) % cfg.vocab_size
        ids = ids[rank * mb : (rank + 1) * mb].to(device)
        out.append([(ids, ids)])
    return out


# -- one system ---------------------------------------------------------------------------------------

class System:
    """A model wrapped by one of runtime_bench's systems; `run` times steps, `profile` traces them."""

    def __init__(self, name: str, args, cfg, world: int, device) -> None:
        self.name, self.device = name, device
        self.clock = rb.Clock(device)
        self.clock.reset_peak()
        t0 = time.perf_counter()
        self.model = rb.build(cfg, device)
        self.step, self.keep = rb.SYSTEMS[name](self.model, args, world)
        self.clock.sync()
        self.setup_s = time.perf_counter() - t0
        self.steps_done = 0

    def run(self, data, warmup: int) -> dict:
        """Step through `data`; step times (CUDA events) and peaks cover the steps after `warmup`."""
        clock = self.clock
        gc.collect()
        clock.reset_peak()
        before = allocator_counters(self.device)
        marks, losses = [], []
        wall0 = None
        for i, micro in enumerate(data):
            if i == warmup:
                clock.sync()
                wall0 = time.perf_counter()
            start = clock.mark()
            losses.extend(self.step(micro, lambda label: None))
            marks.append((start, clock.mark()))
        clock.sync()
        timed = len(data) - warmup
        wall = (time.perf_counter() - wall0) / timed if wall0 is not None else float("nan")
        step_ms = [clock.ms(a, b) for a, b in marks]
        self.steps_done += len(data)
        alloc, reserved = clock.peaks()
        return {
            "step_ms_all": [round(x, 2) for x in step_ms],
            "step_s_median": statistics.median(step_ms[warmup:]) / 1000,
            "step_s_wall_mean": wall,
            "losses_local": [float(x) for x in torch.stack([t.float() for t in losses]).cpu()],
            "peak_alloc_gib": alloc,
            "peak_reserved_gib": reserved,
            "allocator": {k: v - before.get(k, 0) for k, v in allocator_counters(self.device).items()},
        }

    def profile(self, data) -> dict:
        """Trace `data`'s steps with torch.profiler (CUDA activity) and measure exposed communication."""
        from torch.profiler import ProfilerActivity, profile

        if not self.clock.cuda:
            activities = [ProfilerActivity.CPU]
        else:
            activities = [ProfilerActivity.CUDA]
        self.clock.sync()
        with profile(activities=activities) as prof:
            for micro in data:
                self.step(micro, lambda label: None)
            self.clock.sync()
        self.steps_done += len(data)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "trace.json")
            prof.export_chrome_trace(path)
            with open(path) as f:
                events = json.load(f).get("traceEvents", [])
        out = exposed_comm(events, len(data))
        out["kernel_table"] = kernel_table(events, len(data))
        return out

    def close(self) -> None:
        del self.step, self.keep, self.model
        gc.collect()
        self.clock.reset_peak()


# -- exposed communication ----------------------------------------------------------------------------

def _union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[list[float]] = []
    for a, b in sorted(intervals):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [(a, b) for a, b in merged]


def _length(intervals) -> float:
    return sum(b - a for a, b in intervals)


def _minus(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    """Length of union `a` not covered by union `b` (both merged and sorted)."""
    total, j = 0.0, 0
    for s, e in a:
        cur = s
        while j < len(b) and b[j][1] <= cur:
            j += 1
        k = j
        while k < len(b) and b[k][0] < e:
            if b[k][0] > cur:
                total += b[k][0] - cur
            cur = max(cur, b[k][1])
            if cur >= e:
                break
            k += 1
        if cur < e:
            total += e - cur
    return total


def exposed_comm(events: list[dict], steps: int) -> dict:
    """Shares of the traced GPU time: communication alone (compute waited on it), all communication, idle.

    Kernels whose name contains "nccl" are communication, every other kernel is
    compute (copies and memsets are neither). Exposed communication is the union
    of communication kernel intervals minus their overlap with the union of
    compute kernel intervals, over the window from the first to the last GPU
    event of the traced steps.
    """
    comm, compute, gpu = [], [], []
    for e in events:
        if e.get("ph") != "X" or "dur" not in e:
            continue
        cat = e.get("cat", "")
        cat = cat.lower()
        if cat not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        span = (float(e["ts"]), float(e["ts"]) + float(e["dur"]))
        gpu.append(span)
        if cat == "kernel":
            (comm if "nccl" in e.get("name", "").lower() else compute).append(span)
    if not gpu:
        return {"profiled_steps": steps, "kernels": 0}
    window = max(b for _, b in gpu) - min(a for a, _ in gpu)
    comm_u, compute_u, gpu_u = _union(comm), _union(compute), _union(gpu)
    exposed = _minus(comm_u, compute_u)
    return {
        "profiled_steps": steps,
        "kernels": len(comm) + len(compute),
        "comm_kernels": len(comm),
        "window_ms": window / 1000,
        "exposed_comm_ms": exposed / 1000,
        "exposed_comm_share": exposed / window,
        "comm_share": _length(comm_u) / window,
        "idle_share": 1 - _length(gpu_u) / window,
    }


# -- where the GPU time goes ----------------------------------------------------------------------------

# First match wins; names are lower-cased kernel names from the trace.
CATEGORIES = (
    ("comm (nccl)", ("nccl",)),
    ("attention", ("flash", "fmha", "attention", "attn")),
    ("gemm", ("gemm", "cutlass", "xmma", "nvjet", "cublas", "wgmma", "sm90_", "splitk")),
    ("loss (softmax/nll)", ("softmax", "nll_loss", "cross_entropy")),
    ("optimizer (zgen triton)", ("_adamw", "adam", "split_step", "_step_kernel")),
    ("inductor triton", ("triton_",)),
    ("copy/cast", ("copy", "cast", "direct_copy", "cat_", "catarray")),
    ("reduction", ("reduce",)),
    ("elementwise", ("elementwise", "vectorized", "unrolled", "fill", "index")),
)


def _category(name: str, cat: str) -> str:
    if cat == "gpu_memcpy":
        return "memcpy"
    if cat == "gpu_memset":
        return "memset"
    low = name.lower()
    if low == "kernel":  # zgen.runtime.split's Triton AdamW pass (its function is named `kernel`)
        return "optimizer (zgen triton)"
    for label, keys in CATEGORIES:
        if any(k in low for k in keys):
            return label
    return "other"


def kernel_table(events: list[dict], steps: int, top: int = 25) -> dict:
    """GPU time per step by kernel category, and the `top` kernels by total time (ms per step)."""
    by_cat: dict[str, float] = {}
    by_name: dict[str, list[float]] = {}
    for e in events:
        cat = str(e.get("cat", "")).lower()
        if e.get("ph") != "X" or cat not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        name = e.get("name", "")
        c = _category(name, cat)
        d = float(e.get("dur", 0)) / 1000 / steps
        by_cat[c] = by_cat.get(c, 0.0) + d
        rec = by_name.setdefault(f"{c} | {name[:110]}", [0.0, 0])
        rec[0] += d
        rec[1] += 1
    kernels = sorted(by_name.items(), key=lambda kv: -kv[1][0])[:top]
    return {"ms_per_step_by_category": {k: round(v, 2) for k, v in sorted(by_cat.items(), key=lambda kv: -kv[1])},
            "total_ms_per_step": round(sum(by_cat.values()), 2),
            "top_kernels": [[n, round(v[0], 2), v[1] // steps] for n, v in kernels]}


def allocator_counters(device) -> dict:
    """The caching allocator's cumulative counters that show fragmentation trouble (CUDA only)."""
    if device.type != "cuda":
        return {}
    st = torch.cuda.memory_stats(device)
    keys = ("num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free", "num_sync_all_streams")
    return {k: int(st.get(k, 0)) for k in keys}


# -- phases --------------------------------------------------------------------------------------------

def is_oom(e: BaseException) -> bool:
    return isinstance(e, torch.OutOfMemoryError) or "out of memory" in str(e).lower()


def agree(ok: bool, device) -> bool:
    """True only if every rank says so (every rank reaches this after the same steps)."""
    if not dist.is_initialized():
        return ok
    flag = torch.tensor([1 if ok else 0], device=device)
    dist.all_reduce(flag, op=dist.ReduceOp.MIN)
    return bool(flag.item())


def reduce_max(values: list[float], device) -> list[float]:
    if not dist.is_initialized():
        return values
    t = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.tolist()


def gather(obj):
    if not dist.is_initialized():
        return [obj]
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


class Runner:
    def __init__(self, args) -> None:
        self.args = args
        self.job = zr.init_distributed(device=args.device)
        self.world, self.rank, self.device = self.job.world_size, self.job.rank, self.job.device
        cfg = rb.L.build_tiny_model().config if args.tiny else rb.L.LlamaConfig()
        if args.layers is not None:
            cfg.num_hidden_layers = args.layers
        self.cfg = cfg
        self.total_gib = (torch.cuda.get_device_properties(self.device).total_memory / GiB
                          if self.device.type == "cuda" else float(args.cpu_mem_gib))
        self.system: System | None = None
        self.base = {"system": args.label or args.system, "impl": args.system, "world_size": self.world,
                     "seq": args.seq, "grad_accum": 1, "layers": cfg.num_hidden_layers,
                     "params": rb.L.param_count(cfg), "plan": args.plan if args.system.startswith("zgen") else None,
                     "torch": torch.__version__,
                     "gpu": torch.cuda.get_device_name(self.device) if self.device.type == "cuda" else "cpu",
                     "gpu_mem_gib": self.total_gib}

    def emit(self, record: dict) -> None:
        if self.rank != 0:
            return
        line = json.dumps({**self.base, **record})
        print(line, flush=True)
        if self.args.out:
            with open(self.args.out, "a") as f:
                f.write(line + "\n")

    def ensure_system(self) -> System:
        if self.system is None:
            self.system = System(self.args.system, self.args, self.cfg, self.world, self.device)
        return self.system

    def drop_system(self) -> None:
        if self.system is not None:
            self.system.close()
            self.system = None
        gc.collect()
        if self.device.type == "cuda":
            torch.cuda.empty_cache()

    def timed(self, mb: int, steps: int, warmup: int, profile_steps: int) -> dict | None:
        """Run `steps` steps at micro batch `mb` (and profile more); None if any rank ran out of memory."""
        system = self.ensure_system()
        data = batches(self.cfg, steps + profile_steps, mb, self.args.seq, self.rank, self.world, self.device,
                       first_step=system.steps_done)
        ok, res, err = True, None, ""
        try:
            if self.args.fake_oom_above and mb > self.args.fake_oom_above:  # CPU test of the search
                raise torch.OutOfMemoryError(f"fake: micro batch {mb} > {self.args.fake_oom_above}")
            res = system.run(data[:steps], warmup)
            if profile_steps:
                res["profile"] = system.profile(data[steps:])
        except Exception as e:  # noqa: BLE001 - only out-of-memory is expected; anything else is re-raised
            if not is_oom(e):
                raise
            ok, err = False, f"{type(e).__name__}: {str(e)[:200]}"
        del data
        if not agree(ok, self.device):
            self.drop_system()  # an out-of-memory step leaves the engine half-way through it
            self.emit({"phase": "oom", "micro_batch": mb, "error": err or "out of memory on another rank"})
            return None
        res["peak_alloc_gib"], res["peak_reserved_gib"] = reduce_max([res["peak_alloc_gib"],
                                                                      res["peak_reserved_gib"]], self.device)
        tokens = mb * self.args.seq
        res.update(micro_batch=mb, tokens_per_s_per_gpu=tokens / res["step_s_median"],
                   tflops_per_gpu=rb.flops_per_token(self.cfg, self.args.seq) * tokens / res["step_s_median"] / 1e12,
                   setup_s=system.setup_s)
        if "profile" in res:
            res["profile_per_rank"] = gather(res.pop("profile"))
            shares = [p.get("exposed_comm_share", float("nan")) for p in res["profile_per_rank"]]
            res["exposed_comm_share"] = max(shares)
        return res

    def main(self) -> int:
        args = self.args
        # Phase 1: micro batch 1, the loss curve and the profile.
        r1 = self.timed(1, args.loss_steps, args.warmup, args.profile_steps)
        if r1 is None:
            return 1
        losses = torch.tensor(r1.pop("losses_local"), dtype=torch.float64, device=self.device)
        if dist.is_initialized():
            dist.all_reduce(losses)
            losses /= self.world
        r1["losses"] = [round(x, 6) for x in losses.tolist()]
        self.emit({"phase": "mb1", **r1})
        if args.no_search:
            return 0
        if args.start_micro_batch:  # the largest size known from earlier runs: check it and the next one
            r2, predicted = {"micro_batch": 1}, args.start_micro_batch
        else:
            r2, predicted = self.probe(r1)
            if r2 is None:
                return 0
        # Phase 3: upwards from the prediction until out of memory; downwards if the prediction fails.
        best, mb, failed_at = r2, max(predicted, 2 if args.start_micro_batch else 3), None
        while best["micro_batch"] < mb <= args.max_micro_batch:
            res = self.timed(mb, args.warmup_max + args.steps_max, args.warmup_max, args.profile_steps)
            if res is None:
                failed_at = mb
                mb -= 1
                continue
            res.pop("losses_local")
            best = res
            if failed_at is not None:  # came down from a failure: nothing larger fits
                break
            mb += 1
        if best["micro_batch"] > 1:
            self.emit({"phase": "max", **best, "first_oom_micro_batch": failed_at})
        return 0

    def probe(self, r1: dict) -> tuple[dict | None, int]:
        """Phase 2: micro batch 2, whose reserved peak predicts the largest micro batch (None if 2 fails)."""
        args = self.args
        r2 = self.timed(2, 1 + args.probe_steps, 1, 0)
        if r2 is None:
            return None, 0
        r2.pop("losses_local")
        per_seq = max(r2["peak_reserved_gib"] - r1["peak_reserved_gib"], 1e-3)
        target = args.mem_target * self.total_gib
        predicted = max(2, 2 + math.floor((target - r2["peak_reserved_gib"]) / per_seq))
        predicted = min(predicted, args.max_micro_batch)
        self.emit({"phase": "probe", **r2, "reserved_gib_per_sequence": per_seq, "target_gib": target,
                   "predicted_max_micro_batch": predicted})
        return r2, predicted


def summarize(path: str) -> int:
    """Print the table, the loss agreement and the issue-6 targets from a multi_gpu JSON lines file."""
    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    if not rows:
        print(f"{path}: no results")
        return 1
    by = {}
    for r in rows:
        if r.get("phase") in ("mb1", "max"):
            by[(r["system"], r["phase"])] = r
    systems = list(dict.fromkeys(r["system"] for r in rows))
    print(f"\nworld size {rows[0]['world_size']}, seq {rows[0]['seq']}, accumulation 1")
    print(f"{'system':<16} {'phase':<5} {'mb':>3} {'step ms':>8} {'tok/s/GPU':>10} {'TFLOP/s':>8} {'alloc GiB':>10} "
          f"{'resv GiB':>9} {'exposed':>8} {'comm':>6} {'idle':>6}")
    for s in systems:
        for ph in ("mb1", "max"):
            r = by.get((s, ph))
            if r is None:
                continue
            prof = max(r.get("profile_per_rank") or [{}], key=lambda p: p.get("exposed_comm_share", 0))
            pct = lambda k: f"{100 * prof[k]:5.1f}%" if k in prof else "   n/a"  # noqa: E731
            print(f"{s:<16} {ph:<5} {r['micro_batch']:>3} {r['step_s_median'] * 1000:8.1f} "
                  f"{r['tokens_per_s_per_gpu']:10.0f} {r['tflops_per_gpu']:8.1f} {r['peak_alloc_gib']:10.2f} "
                  f"{r['peak_reserved_gib']:9.2f} {pct('exposed_comm_share'):>8} {pct('comm_share'):>6} {pct('idle_share'):>6}")
    for r in rows:
        if r.get("phase") == "oom":
            print(f"{r['system']}: out of memory at micro batch {r['micro_batch']}")
    ref_name = "fsdp2" if ("fsdp2", "mb1") in by else (systems[0] if systems else None)
    if ref_name and (ref_name, "mb1") in by:
        ref = by[(ref_name, "mb1")]["losses"]
        print(f"\nlosses (global mean, micro batch 1) of {ref_name}: {[round(x, 4) for x in ref]}")
        for s in systems:
            r = by.get((s, "mb1"))
            if r is None or s == ref_name:
                continue
            n = min(len(ref), len(r["losses"]))
            diffs = [abs(a - b) for a, b in zip(ref[:n], r["losses"][:n])]
            rel = max(d / abs(b) for d, b in zip(diffs, ref[:n]))
            print(f"{s:<16} max |loss - {ref_name}| over {n} steps {max(diffs):.2e} (relative {rel:.2e}); "
                  f"last {r['losses'][n - 1]:.4f} vs {ref[n - 1]:.4f}")
    zgen = [s for s in systems if s.startswith("zgen")]
    for z in zgen:
        for ph in ("mb1", "max"):
            zr_ = by.get((z, ph))
            if zr_ is None:
                continue
            for other in systems:
                o = by.get((other, ph))
                if o is None or other.startswith("zgen"):
                    continue
                print(f"{z} / {other} ({ph}): tokens/s/GPU x{zr_['tokens_per_s_per_gpu'] / o['tokens_per_s_per_gpu']:.3f}, "
                      f"peak alloc {zr_['peak_alloc_gib']:.2f} vs {o['peak_alloc_gib']:.2f} GiB")
    print_kernel_tables(by, systems)
    return 0


def print_kernel_tables(by: dict, systems: list[str]) -> None:
    """GPU ms per step by kernel category (rank 0's profile), one column per system and phase."""
    cols = [(s, ph) for s in systems for ph in ("mb1", "max")
            if (s, ph) in by and (by[(s, ph)].get("profile_per_rank") or [{}])[0].get("kernel_table")]
    if not cols:
        return
    tables = {c: by[c]["profile_per_rank"][0]["kernel_table"] for c in cols}
    cats = list(dict.fromkeys(k for t in tables.values() for k in t["ms_per_step_by_category"]))
    print("\nGPU ms per step by kernel category (rank 0, profiled steps):")
    print(f"{'category':<26}" + "".join(f"{s[:14] + ' ' + str(by[(s, ph)]['micro_batch']):>18}" for s, ph in cols))
    for k in cats + ["total_ms_per_step"]:
        vals = [t["ms_per_step_by_category"].get(k, 0.0) if k != "total_ms_per_step" else t[k] for t in tables.values()]
        print(f"{k:<26}" + "".join(f"{v:18.2f}" for v in vals))
    for c in cols:
        alloc = by[c].get("allocator")
        if alloc:
            print(f"{c[0]} mb {by[c]['micro_batch']} allocator: {alloc}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--system", choices=sorted(rb.SYSTEMS), help="runtime_bench system to run")
    ap.add_argument("--label", default=None, help="name in the results (default: --system)")
    ap.add_argument("--plan", default=None, help="zgen: the `zgen plan --json` file (default: the runtime's plan)")
    ap.add_argument("--seq", type=int, default=8192)
    ap.add_argument("--loss-steps", type=int, default=20, help="micro batch 1 steps (losses compared across systems)")
    ap.add_argument("--warmup", type=int, default=3, help="micro batch 1 steps left out of the median")
    ap.add_argument("--probe-steps", type=int, default=2)
    ap.add_argument("--steps-max", type=int, default=5, help="timed steps at each larger micro batch")
    ap.add_argument("--warmup-max", type=int, default=2)
    ap.add_argument("--profile-steps", type=int, default=2)
    ap.add_argument("--mem-target", type=float, default=0.94, help="predicted reserved peak as a share of the GPU")
    ap.add_argument("--max-micro-batch", type=int, default=16)
    ap.add_argument("--no-search", action="store_true", help="micro batch 1 only")
    ap.add_argument("--start-micro-batch", type=int, default=0,
                    help="skip the probe: time this micro batch, then larger ones until out of memory (smaller if it fails)")
    ap.add_argument("--layers", type=int, default=None)
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--cpu-mem-gib", type=float, default=4.0, help="--device cpu: the memory the search assumes")
    ap.add_argument("--fake-oom-above", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--nccl-timeout-s", type=int, default=120, help="a rank stuck in a collective aborts after this")
    ap.add_argument("--out", default=None, help="JSON lines file (default $OUT/multi_gpu.jsonl)")
    ap.add_argument("--summarize", metavar="JSONL", help="print the table from a results file and exit")
    args = ap.parse_args(argv)
    if args.summarize:
        return summarize(args.summarize)
    if not args.system:
        ap.error("--system is required")
    args.out = args.out or (os.path.join(os.environ["OUT"], "multi_gpu.jsonl") if "OUT" in os.environ else None)
    # runtime_bench's setup functions read these
    args.grad_accum, args.micro_batch = 1, 1
    if "RANK" in os.environ and not dist.is_initialized():
        # Own process group so a rank left waiting in a collective (another ran out of memory) aborts.
        timeout = datetime.timedelta(seconds=args.nccl_timeout_s)
        if args.device == "cuda":
            dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
            torch.cuda.set_device(dev)
            dist.init_process_group("nccl", device_id=dev, timeout=timeout)
        else:
            dist.init_process_group("gloo", timeout=timeout)
    runner = Runner(args)
    try:
        code = runner.main()
    finally:
        runner.drop_system()
        if dist.is_initialized():
            dist.barrier()
            zr.shutdown()
    return code


if __name__ == "__main__":
    raise SystemExit(main())
