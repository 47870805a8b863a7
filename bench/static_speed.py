"""Speed of the static check (`zgen check`, no `--trace`) against issue 20's targets; prints figures.

    python bench/static_speed.py                 # both measurements, 3 runs of the single file
    python bench/static_speed.py --runs 5 --skip-all

Two measurements, each a fresh `python -m zgen check` process, so interpreter start
and imports are included (what a user or a pre-commit hook waits for):

* one ~2,000-line file with `--no-cache` (default transformers' `modeling_mvp.py`,
  1,955 lines; target 0.5 s): wall and user+system CPU of each run, and the median;
* every `transformers/models/*/modeling_*.py` of the pinned release (382 files) cold,
  in a fresh cache directory (target 30 s), then warm from that cache (target 3 s):
  wall, CPU of the process and its workers, files per second.

Each figure is printed with the load average beside it: other jobs on the machine
slow the wall time, not the CPU time, so compare CPU time between versions run back
to back. The interpreter may write bytecode (`PYTHONDONTWRITEBYTECODE` is dropped), as
a user's does; a first run after an edit compiles once.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = Path("/work/corpus-src/transformers-4.48.3/transformers/models")
_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def timed(cmd: list[str], cwd: str) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of the child and its workers, exit code) of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=_ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"zgen failed (exit {done.returncode}): {done.stderr.strip()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.returncode


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--file", type=Path, default=SRC / "mvp" / "modeling_mvp.py", help="the single file")
    p.add_argument("--runs", type=int, default=3, help="runs of the single file (default 3)")
    p.add_argument("--src", type=Path, default=SRC, help="transformers' models directory")
    p.add_argument("--skip-all", action="store_true", help="only the single file")
    p.add_argument("--skip-one", action="store_true", help="only the model files, cold and warm")
    args = p.parse_args(argv)
    zgen = [sys.executable, "-m", "zgen", "check", "--exit-zero"]
    with tempfile.TemporaryDirectory(prefix="zgen-speed-") as scratch:
        if not args.skip_one:
            f = args.file.resolve()
            lines = len(f.read_text(encoding="utf-8").splitlines())
            timed(zgen + ["--no-cache", str(f)], scratch)  # bytecode written, files in the page cache
            walls, cpus = [], []
            for _ in range(args.runs):
                wall, cpu, _rc = timed(zgen + ["--no-cache", str(f)], scratch)
                walls.append(wall)
                cpus.append(cpu)
                print(f"one file ({f.name}, {lines} lines, --no-cache): {wall:.2f} s wall, {cpu:.2f} s CPU"
                      f"  [load {_load()}]")
            print(f"one file median: {statistics.median(walls):.2f} s wall, {statistics.median(cpus):.2f} s CPU"
                  f" (target 0.5 s)")
        if not args.skip_all:
            files = sorted(str(p.resolve()) for p in args.src.glob("*/modeling_*.py"))
            for label, target in (("cold", 30.0), ("warm", 3.0)):  # the cache: scratch/.zgen_cache
                wall, cpu, _rc = timed(zgen + files, scratch)
                print(f"all {len(files)} model files {label}: {wall:.2f} s wall, {cpu:.2f} s CPU, "
                      f"{len(files) / wall:.1f} files/s (target {target:g} s)  [load {_load()}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
