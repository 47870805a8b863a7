"""How many module classes share each method name, and whether they agree on computing with their own parameters.

    PYTHONPATH=. python bench/zg3_byname.py [--src /work/corpus-src]

For every labelled file of the readable corpus sets (not the blind ones, not `transformers`): the method names (not
dunders, not `forward`) that the file's module classes and the module classes it imports by name define
(`own._defining_classes`: the classes a call on a module of no named class may run), how many classes define each,
how many of them compute with their own parameters when it is called (`instances.reads_own`, outside forward), and
whether a class of the file that is no module defines the name too. Prints the counts, then one line per name shared
by several classes of which some read their own parameters: file, name, classes reading, classes defining, plain.
"""

from __future__ import annotations

import argparse
import collections
import signal
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "corpus"))

from score import locate, read_manifest  # noqa: E402

from zgen.model.analysis.instances import Instance, reads_own  # noqa: E402
from zgen.model.analysis.own import _defining_classes  # noqa: E402
from zgen.model.program.index import ModelIndex  # noqa: E402
from zgen.model.program.project import project  # noqa: E402
from zgen.model.program.skeleton import build_skeleton  # noqa: E402

_LEFT_OUT = ("blind9", "blind10", "transformers")


def _index(path: Path) -> ModelIndex:
    source = path.read_text()
    files = project()
    module, is_package = files.begin(str(path))
    return ModelIndex(str(path), source, build_skeleton(source), files, module, is_package)


def _timeout(*_args) -> None:
    raise TimeoutError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", type=Path, default=Path("/work/corpus-src"))
    args = parser.parse_args(argv)
    items = [i for i in read_manifest(HERE / "corpus" / "manifest.tsv") if i.set not in _LEFT_OUT]
    files = sorted(set(locate(items, args.src, fetch=False).values()))
    counts: collections.Counter = collections.Counter()
    shared = []
    signal.signal(signal.SIGALRM, _timeout)
    for path in files:
        signal.alarm(20)  # a file whose imports take longer is counted apart
        try:
            index = _index(path)
            names = {n for c in index.module_classes() for n in c.span.methods if n[:2] != "__" and n != "forward"}
            plain = {n for c in index.classes.values() if not c.is_module for n in c.span.methods}
            for name in sorted(names):
                refs = _defining_classes(index, name)
                reading = [r for r in refs if reads_own(index, Instance((r,), True), name, in_forward=False)]
                counts[f"defined by {min(len(refs), 4)}{'+' if len(refs) >= 4 else ''}"] += 1
                if not reading:
                    continue
                counts["some read"] += 1
                counts["plain defines too"] += name in plain
                if len(refs) > 1:
                    agree = "all" if len(reading) == len(refs) else "majority" if 2 * len(reading) > len(refs) else "half or fewer"
                    counts[f"shared, {agree} read"] += 1
                    shared.append((str(path.relative_to(args.src)), name, len(reading), len(refs), name in plain))
        except TimeoutError:
            counts["timed out"] += 1
        finally:
            signal.alarm(0)
    print(f"{len(files)} files:", ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    for row in shared:
        print(*row, sep="\t")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
