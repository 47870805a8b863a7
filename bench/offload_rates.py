"""The rates `zgen.steptime` uses for offload, measured the way `zgen.runtime.offload` works.

    python bench/offload_rates.py --params 218103808 --out rates.json   # one Llama-3.1-8B block's shard

* `host_update_params`: parameters per second of the host thread's work per
  unit (`OffloadedOptimizer._update`): torch's fused CPU AdamW
  (`zgen.runtime.optim.TorchAdamW`) on a pinned fp32 master with a pinned
  fp32 gradient and a device-side divisor's host copy as `grad_scale`, then
  the cast of the master into a pinned compute-dtype buffer. Timed on the
  thread pool's one worker, as the runtime runs it, after one warm-up step
  (Adam's state is allocated then).
* `one_pass_params`: the same update as `zgen.runtime.host_adam.HostAdam`
  does it (the offload's path for Adam(W) on CUDA): one compiled pass that
  also writes the compute-dtype copy; `one_pass_compile_s` is the compile.
  Absent (with `one_pass_error`) where the kernel cannot be compiled.
* `--chunks 65536,1048576`: the same step and cast run chunk by chunk
  (`torch._fused_adamw_` on each chunk's slices of master, gradient and
  moments, then that chunk's cast while the master's slice may still be in
  cache), alternated with the whole-shard step so both see the same machine
  load; `chunked[size]` gives both rates and whether the chunked result is
  bit-equal to the whole-shard one (AdamW is element-wise).
* `d2h_bytes`: a fp32 gradient shard copied into pinned host memory on a side
  stream (`non_blocking`), CUDA events; `h2d_bytes`: a bf16 shard copied up
  from pinned memory. Also both at once (`concurrent_*`), as the pipeline
  overlaps them.

One JSON object to --out (and stdout). Median of --repeat runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import torch


def host_update(n: int, repeat: int, pool: ThreadPoolExecutor) -> tuple[float, float, float]:
    """Seconds of one fused AdamW step, one fp32-to-bf16 cast, and both together, over `n` parameters."""
    pin = torch.cuda.is_available()
    master = torch.randn(n, dtype=torch.float32).pin_memory() if pin else torch.randn(n)
    grad = torch.randn(n, dtype=torch.float32).pin_memory() if pin else torch.randn(n)
    low = torch.empty(n, dtype=torch.bfloat16, pin_memory=pin)
    scale = torch.tensor(1.0)
    opt = torch.optim.AdamW([master], lr=1e-4, weight_decay=0.1, fused=True)

    def adam() -> float:
        t = time.perf_counter()
        opt.grad_scale = scale
        master.grad = grad
        opt.step()
        master.grad = None
        return time.perf_counter() - t

    def cast() -> float:
        t = time.perf_counter()
        low.copy_(master)
        return time.perf_counter() - t

    pool.submit(adam).result()
    a = statistics.median(pool.submit(adam).result() for _ in range(repeat))
    c = statistics.median(pool.submit(cast).result() for _ in range(repeat))
    return a, c, a + c


def one_pass_update(n: int, repeat: int, pool: ThreadPoolExecutor) -> dict:
    """`host_adam.HostAdam`'s compiled update with its cast, over `n` parameters; its rate and compile time."""
    from types import SimpleNamespace

    from zgen.runtime.config import RuntimeConfig
    from zgen.runtime.host_adam import HostAdam
    from zgen.runtime.optim import TorchAdamW

    pin = torch.cuda.is_available()
    unit = SimpleNamespace(label="u", master=torch.randn(n).pin_memory() if pin else torch.randn(n))
    grad = torch.randn(n).pin_memory() if pin else torch.randn(n)
    low = torch.empty(n, dtype=torch.bfloat16, pin_memory=pin)
    config = RuntimeConfig.load({"train_batch_size": 1, "bf16": {"enabled": True}, "zero_optimization": {"stage": 3},
                                 "optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "weight_decay": 0.1}}}, 1)
    t = time.perf_counter()
    fused = HostAdam.build(TorchAdamW([unit], config), torch.bfloat16)
    compile_s = time.perf_counter() - t
    if fused is None:
        return {"one_pass_error": "HostAdam.build returned None (see the warning)"}
    scale = torch.tensor(1.0)

    def step() -> float:
        t = time.perf_counter()
        fused.step_unit(unit, grad, scale, 1e-4, low)
        return time.perf_counter() - t

    pool.submit(step).result()
    s = statistics.median(pool.submit(step).result() for _ in range(repeat))
    return {"one_pass_s": s, "one_pass_params": n / s, "one_pass_compile_s": compile_s}


def chunked_update(n: int, chunk: int, repeat: int, pool: ThreadPoolExecutor) -> dict:
    """The fused step and the cast over `n` parameters, whole and chunk by chunk (alternated); rates and bit-equality."""
    torch.manual_seed(0)
    grad0 = torch.randn(n)
    runs = {}
    for name in ("whole", "chunked"):
        master = torch.randn(n, generator=torch.Generator().manual_seed(1))
        runs[name] = {"master": master, "grad": torch.empty(n), "low": torch.empty(n, dtype=torch.bfloat16),
                      "exp_avg": torch.zeros(n), "exp_avg_sq": torch.zeros(n), "step": torch.tensor(0.0), "s": []}
    scale = torch.tensor(2.0)

    def step(r: dict, size: int) -> float:
        r["grad"].copy_(grad0)  # the fused step divides the gradient by `grad_scale` in place
        t = time.perf_counter()
        r["step"] += 1
        for a in range(0, n, size):
            b = min(n, a + size)
            torch._fused_adamw_([r["master"][a:b]], [r["grad"][a:b]], [r["exp_avg"][a:b]], [r["exp_avg_sq"][a:b]], [],
                                [r["step"]], amsgrad=False, lr=1e-4, beta1=0.9, beta2=0.999, weight_decay=0.1,
                                eps=1e-8, maximize=False, grad_scale=scale, found_inf=None)
            r["low"][a:b].copy_(r["master"][a:b])
        return time.perf_counter() - t

    for i in range(repeat + 1):  # the first round is a warm-up
        for name, size in (("whole", n), ("chunked", chunk)):
            dt = pool.submit(step, runs[name], size).result()
            if i:
                runs[name]["s"].append(dt)
    w, c = runs["whole"], runs["chunked"]
    return {"whole_params": n / statistics.median(w["s"]), "chunked_params": n / statistics.median(c["s"]),
            "bit_equal": torch.equal(w["master"], c["master"]) and torch.equal(w["low"], c["low"])
            and torch.equal(w["exp_avg_sq"], c["exp_avg_sq"])}


def copies(n: int, repeat: int) -> dict:
    """Device-to-host fp32 and host-to-device bf16 bytes per second, alone and at once (pinned, side streams)."""
    dev32 = torch.randn(n, device="cuda")
    host32 = torch.empty(n, dtype=torch.float32, pin_memory=True)
    host16 = torch.randn(n).to(torch.bfloat16).pin_memory()
    dev16 = torch.empty(n, dtype=torch.bfloat16, device="cuda")
    down, up = torch.cuda.Stream(), torch.cuda.Stream()

    def timed(stream, fn) -> float:
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with torch.cuda.stream(stream):
            a.record()
            fn()
            b.record()
        torch.cuda.synchronize()
        return a.elapsed_time(b) / 1e3

    d = statistics.median(timed(down, lambda: host32.copy_(dev32, non_blocking=True)) for _ in range(repeat))
    u = statistics.median(timed(up, lambda: dev16.copy_(host16, non_blocking=True)) for _ in range(repeat))
    both = []
    for _ in range(repeat):
        torch.cuda.synchronize()
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
        with torch.cuda.stream(down):
            ev[0].record()
            host32.copy_(dev32, non_blocking=True)
            ev[1].record()
        with torch.cuda.stream(up):
            ev[2].record()
            dev16.copy_(host16, non_blocking=True)
            ev[3].record()
        torch.cuda.synchronize()
        both.append((ev[0].elapsed_time(ev[1]) / 1e3, ev[2].elapsed_time(ev[3]) / 1e3))
    return {"d2h_bytes": 4 * n / d, "h2d_bytes": 2 * n / u,
            "concurrent_d2h_bytes": 4 * n / statistics.median(b[0] for b in both),
            "concurrent_h2d_bytes": 2 * n / statistics.median(b[1] for b in both)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", type=int, default=218_103_808, help="parameters of one unit's shard")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default=None)
    ap.add_argument("--chunks", default="", help="comma-separated chunk sizes (elements) to time the chunked update at")
    args = ap.parse_args(argv)
    pool = ThreadPoolExecutor(max_workers=1)
    adam, cast, both = host_update(args.params, args.repeat, pool)
    out = {"params": args.params, "threads": torch.get_num_threads(), "adam_s": adam, "cast_s": cast,
           "host_update_params": args.params / both, "adam_params": args.params / adam}
    out.update(one_pass_update(args.params, args.repeat, pool))
    for size in filter(None, args.chunks.split(",")):
        out.setdefault("chunked", {})[size] = chunked_update(args.params, int(size), args.repeat, pool)
    if torch.cuda.is_available():
        out.update(copies(args.params, args.repeat))
        out["gpu"] = torch.cuda.get_device_name()
    out["torch"] = torch.__version__
    print(json.dumps(out), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write(json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
