"""What is allocated at the peak of a recorded step: `runtime_bench.memory_history`'s snapshot, read without a GPU.

    python bench/memory_history.py snap.pickle.gz [--top 25]

Replays the allocator's trace (alloc / free_completed events of device 0)
from the blocks live when recording started, finds the highest point of
allocated bytes, and prints what was live there grouped by the innermost
Python frame of this repository that allocated it (file:line, function),
largest first; blocks allocated before the recording started are one group.
Also prints the allocated bytes at the step's first and last event.
"""

from __future__ import annotations

import argparse
import gzip
import pickle
from collections import defaultdict

GiB = 2**30


def _site(frames: list[dict]) -> str:
    for f in frames:
        name = f.get("filename", "")
        if any(k in name for k in ("zgen/", "bench/", "examples/")) and "memory_history" not in name:
            return f"{name.split('/rt/')[-1]}:{f.get('line')} {f.get('name')}"
    return (f"{frames[0].get('filename', '?').split('/')[-1]}:{frames[0].get('line')} {frames[0].get('name')}"
            if frames else "?")


def peak(snap: dict) -> tuple[int, dict[int, tuple[int, str]], int, int]:
    """Peak allocated bytes, the blocks live there (addr -> (size, site)), first and last allocated bytes."""
    live: dict[int, tuple[int, str]] = {}
    trace = snap["device_traces"][0]
    allocated_in_trace = {e["addr"] for e in trace if e["action"] == "alloc"}
    # blocks allocated when the snapshot was taken that the trace never allocated: alive before it began
    for seg in snap.get("segments", []):
        if seg.get("device", 0) != 0:
            continue
        for b in seg.get("blocks", []):
            if b.get("state") == "active_allocated" and b["addr"] not in allocated_in_trace:
                live[b["addr"]] = (b["size"], "before the recorded step")
    # blocks freed in the trace but never allocated in it were alive at its start
    first_alloc: dict[int, int] = {}
    for i, e in enumerate(trace):
        if e["action"] == "alloc":
            first_alloc.setdefault(e["addr"], i)
    for i, e in enumerate(trace):
        if e["action"] == "free_completed" and first_alloc.get(e["addr"], len(trace)) > i and e["addr"] not in live:
            live[e["addr"]] = (e["size"], "before the recorded step")
    total = sum(s for s, _ in live.values())
    start, best, best_live = total, total, dict(live)
    for e in trace:
        if e["action"] == "alloc":
            live[e["addr"]] = (e["size"], _site(e.get("frames", [])))
            total += e["size"]
            if total > best:
                best, best_live = total, dict(live)
        elif e["action"] == "free_completed" and e["addr"] in live:
            total -= live.pop(e["addr"])[0]
    return best, best_live, start, total


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("snapshot")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args(argv)
    with gzip.open(args.snapshot, "rb") as f:
        snap = pickle.load(f)
    best, live, start, end = peak(snap)
    print(f"peak allocated {best / GiB:.2f} GiB (step start {start / GiB:.2f}, end {end / GiB:.2f})")
    groups: dict[str, list[int]] = defaultdict(list)
    for size, site in live.values():
        groups[site].append(size)
    for site, sizes in sorted(groups.items(), key=lambda kv: -sum(kv[1]))[: args.top]:
        print(f"  {sum(sizes) / GiB:7.3f} GiB  {len(sizes):5d} blocks  {site}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
