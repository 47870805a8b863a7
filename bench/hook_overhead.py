"""Host time the engine spends per step on its own Python work, for each sharding strategy.

CPU, a 16-unit toy model whose compute is negligible, so a step (forward, backward, optimizer step)
is the engine's hooks, gathers, frees, gradient folding and update calls. Strategies: one rank (fp32:
units never gathered; bf16: a cast per gather), and at world size 2 over gloo flat, hpZ over 2 and
parameter offload. Prints the best-of-`--repeat` mean step time in ms per strategy: wall clock, and
the CPU time of rank 0's process (the engine's own work; steadier than the wall clock on a shared machine).

    python bench/hook_overhead.py                # this checkout's zgen
    PYTHONPATH=/path/to/other/checkout python bench/hook_overhead.py   # another version, same benchmark

The figures compare versions on one machine in one session; they are not absolute.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from backward_overhead import UNITS, Net  # the same 16-unit toy model, its compute negligible

WARMUP = 5
CALLS = False  # --calls: count Python function calls per step instead of timing


def config(world: int, **zero) -> dict:
    return {"train_batch_size": 2 * world, "train_micro_batch_size_per_gpu": 2,
            "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}},
            "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0, **zero}}


CASES = {
    "one rank fp32": (1, config(1)),
    "one rank bf16": (1, {**config(1), "bf16": {"enabled": True}}),
    "flat, world 2": (2, config(2)),
    "hpZ 2, world 2": (2, config(2, zero_hpz_partition_size=2)),
    "param offload, world 2": (2, config(2, offload_optimizer={"device": "cpu"}, offload_param={"device": "cpu"})),
}


def step_ms(cfg: dict, steps: int, repeat: int) -> tuple[float, float]:
    import zgen.runtime as zr

    torch.manual_seed(0)
    kwargs = {"split_master": False} if cfg.get("bf16") else {}
    dtype = torch.bfloat16 if cfg.get("bf16") else torch.float32
    engine, x = zr.initialize(Net(), cfg, device="cpu", **kwargs), torch.randn(2, 8, dtype=dtype)
    best = (float("inf"), float("inf"))
    for _ in range(WARMUP):
        engine.backward(engine(x))
        engine.step()
    if CALLS:
        return calls_per_step(engine, x, steps)
    for _ in range(repeat):
        if dist.is_initialized():
            dist.barrier()
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(steps):
            engine.backward(engine(x))
            engine.step()
        wall, cpu = (time.perf_counter() - t0) / steps * 1e3, (time.process_time() - c0) / steps * 1e3
        best = (min(best[0], wall), min(best[1], cpu))
    return best


def calls_per_step(engine, x: torch.Tensor, steps: int) -> tuple[float, float]:
    """Python function calls per step: all of them, and those in zgen's own files (deterministic, unlike time)."""
    import cProfile
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    for _ in range(steps):
        engine.backward(engine(x))
        engine.step()
    prof.disable()
    stats = pstats.Stats(prof).stats
    total = sum(calls for (_, _, _), (_, calls, _, _, _) in stats.items())
    own = sum(calls for (path, _, _), (_, calls, _, _, _) in stats.items() if f"{os.sep}zgen{os.sep}" in path)
    return total / steps, own / steps


def _worker(rank: int, world: int, port: int, cfg: dict, steps: int, repeat: int, calls: bool, out) -> None:
    global CALLS
    CALLS = calls
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    import zgen.runtime as zr

    try:
        ms = step_ms(cfg, steps, repeat)
        if rank == 0:
            out.put(ms)
    finally:
        zr.shutdown()  # collects the engine's autograd cycles before gloo goes away


def run(world: int, cfg: dict, steps: int, repeat: int) -> tuple[float, float]:
    if world == 1:
        torch.set_num_threads(1)
        return step_ms(cfg, steps, repeat)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    out = ctx.SimpleQueue()
    mp.start_processes(_worker, args=(world, port, cfg, steps, repeat, CALLS, out), nprocs=world,
                       start_method="spawn")
    return out.get()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=40, help="steps per timed run")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs; the best is printed")
    ap.add_argument("--case", action="append", choices=sorted(CASES), help="run only these (default: all)")
    ap.add_argument("--calls", action="store_true",
                    help="count Python function calls per step instead of timing (the same on any machine)")
    args = ap.parse_args(argv)
    import zgen

    global CALLS
    CALLS = args.calls
    what = "function calls per step" if CALLS else f"best of {args.repeat} x {args.steps} steps"
    print(f"zgen from {os.path.dirname(zgen.__file__)}; {UNITS} units, {what}")
    for name in args.case or CASES:
        world, cfg = CASES[name]
        a, b = run(world, cfg, args.steps, args.repeat)
        if CALLS:
            print(f"  {name:<24} {a:8.0f} Python calls per step, {b:8.0f} of them in zgen (rank 0)", flush=True)
        else:
            print(f"  {name:<24} {a:7.3f} ms/step wall, {b:7.3f} ms/step CPU (rank 0's process)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
