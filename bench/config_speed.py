"""Wall time of `zgen check CONFIG` per config file, interpreter start included; prints the median.

    python bench/config_speed.py                      # the configs of bench/configs/manifest.tsv
    python bench/config_speed.py a.json b.json -n 5   # given files, 5 runs each

The manifest's configs are read from `--root` (default /work/corpus-src/configs,
laid out as `<owner>+<repo>/<path>`; `bench/configs/fetch.py` puts them there).
Each run is a fresh `python -m zgen.cli check FILE --no-cache` process, so the
figure is what a user or a pre-commit hook waits for. Runs are sequential;
on a loaded machine take the median of several passes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "configs" / "manifest.tsv"


def manifest_files(root: Path) -> list[Path]:
    """The manifest's configs under `root`, in manifest order (missing ones skipped with a note)."""
    files = []
    for line in MANIFEST.read_text().splitlines()[1:]:
        if not line.strip():
            continue
        repo, _commit, path = line.split("\t")[:3]
        f = root / repo.replace("/", "+") / path
        if f.is_file():
            files.append(f)
        else:
            print(f"missing: {f}", file=sys.stderr)
    return files


# A user's interpreter reads compiled bytecode; an environment that forbids writing it would time compilation.
_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def one_run(path: Path) -> tuple[float, int]:
    """(seconds, exit code) of one `zgen check path` in a new interpreter."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "zgen.cli", "check", str(path), "--no-cache"],
                          capture_output=True, cwd=path.parent, env=_ENV)
    return time.perf_counter() - start, done.returncode


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="*", type=Path)
    p.add_argument("-n", "--runs", type=int, default=3, help="runs per config (default 3)")
    p.add_argument("--root", type=Path, default=Path("/work/corpus-src/configs"))
    args = p.parse_args(argv)
    files = [f.resolve() for f in args.files] or manifest_files(args.root)
    if not files:
        print("no configs to time", file=sys.stderr)
        return 2
    one_run(files[0])  # writes the bytecode caches, as any first run does
    times = []
    for f in files:
        runs = [one_run(f) for _ in range(args.runs)]
        if any(code == 2 for _, code in runs):
            print(f"{f}: zgen could not check it (exit 2)", file=sys.stderr)
        best = statistics.median(t for t, _ in runs)
        times.extend(t for t, _ in runs)
        print(f"{best:6.3f} s  {f}")
    print(f"median over {len(files)} configs x {args.runs} runs: {statistics.median(times):.3f} s "
          f"(min {min(times):.3f}, max {max(times):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
