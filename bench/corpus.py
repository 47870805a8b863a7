"""Run zgen's model checker over a corpus of model files and print throughput and findings.

    python bench/corpus.py /work/corpus/transformers            # every modeling_*.py below it
    python bench/corpus.py DIR --all-py --jobs 1                 # every .py, one process
    python bench/corpus.py DIR --show ZG301                      # also print the ZG301 findings

Independent of the CLI: it calls `zgen.model.check_source` directly, in
`--jobs` worker processes (default: all CPUs), without any cache. Wall time
includes starting the workers and importing zgen in them.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path


def _check(path: str) -> tuple[str, list, float, str | None]:
    from zgen.model import check_source

    source = Path(path).read_bytes().decode("utf-8", errors="replace")
    start = time.process_time()  # CPU of this process: robust when other jobs share the cores
    try:
        findings = check_source(path, source)
        error = None
    except Exception as exc:  # noqa: BLE001 - a crash is a result this benchmark reports
        findings, error = [], f"{type(exc).__name__}: {exc}"
    return path, findings, time.process_time() - start, error


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--all-py", action="store_true", help="check every .py file, not only modeling_*.py")
    parser.add_argument("--show", action="append", default=[], help="print findings of this code (repeatable)")
    parser.add_argument("--slowest", type=int, default=5, help="list the N slowest files")
    args = parser.parse_args(argv)

    pattern = "*.py" if args.all_py else "modeling_*.py"
    files = sorted(str(p) for p in args.root.rglob(pattern))
    if not files:
        print(f"no {pattern} files under {args.root}", file=sys.stderr)
        return 2
    size = sum(os.path.getsize(f) for f in files)

    start = time.perf_counter()
    if args.jobs == 1:
        results = [_check(f) for f in files]
    else:
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            results = list(pool.map(_check, files, chunksize=4))
    wall = time.perf_counter() - start

    codes: Counter[str] = Counter()
    crashes = []
    for path, findings, _, error in results:
        codes.update(f.code for f in findings)
        if error:
            crashes.append((path, error))
        for f in findings:
            if f.code in args.show or "all" in args.show:
                print(f"{f.path}:{f.line}:{f.column}: {f.code} {f.message}")
    cpu = sum(r[2] for r in results)

    print(f"files        {len(files)} ({size / 1e6:.1f} MB)")
    print(f"jobs         {args.jobs}")
    print(f"wall         {wall:.2f} s")
    print(f"files/s      {len(files) / wall:.1f}")
    print(f"check cpu    {cpu:.2f} s summed over files ({len(files) / cpu:.1f} files/s per process, CPU time)")
    print(f"crashes      {len(crashes)}")
    for path, error in crashes:
        print(f"  {path}: {error}")
    print("findings per code:")
    for code, n in sorted(codes.items()):
        print(f"  {code}  {n}")
    print(f"  total  {sum(codes.values())}")
    if args.slowest:
        print("slowest files:")
        for path, _, seconds, _ in sorted(results, key=lambda r: -r[2])[: args.slowest]:
            print(f"  {seconds * 1000:7.0f} ms  {path}")
    return 1 if crashes else 0


if __name__ == "__main__":
    raise SystemExit(main())
