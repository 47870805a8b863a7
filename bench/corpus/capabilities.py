"""What the hazards zgen misses on a held-out set need, in counts only: tags crossed with found/missed.

    python bench/corpus/capabilities.py --set blind9 --zgen-python .venv/bin/python

`capabilities.tsv` tags every hazard of a held-out set with the analysis question it needs (where the
hazardous line runs, how the code reaches the module, how many calls lie between, whether another file is
needed, and the operation, condition or foreign read by family). The tags were written by labellers who never
read zgen's source nor ran it. This script runs zgen over the set once and prints, for each tag column, how
many hazards of each value zgen finds and misses. It never prints a file, a line or a capability phrase, so
the set stays held out while its misses are counted by kind.

Exit status: 0 when it ran, 2 on bad input (a malformed tags file, a missing source).
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

from score import HERE, SETS, BadInput, locate, match, read_manifest, run_zgen, tsv_rows

TAGS = HERE / "capabilities.tsv"
WHERE = ("set", "package", "version", "file", "line", "family")
COUNTED = ("site", "receiver", "hops", "cross_file", "op", "cond", "skipped", "foreign")
COLUMNS = (*WHERE, *COUNTED, "capability")


def read_tags(path: Path) -> dict[tuple[str, ...], dict[str, str]]:
    """Tags by the item they describe (set, package, version, file, line or span, family)."""
    return {tuple(values[k] for k in WHERE): values for _, values in tsv_rows(path, COLUMNS)}


def crossed(tags: dict[tuple[str, ...], dict[str, str]], found: dict[tuple[str, ...], bool]) -> dict:
    """{column: {(family, value): [found, missed]}} over the tagged hazards zgen was run on."""
    table: dict[str, dict[tuple[str, str], list[int]]] = {c: defaultdict(lambda: [0, 0]) for c in COUNTED}
    for key, values in tags.items():
        if key not in found:
            continue
        for column in COUNTED:
            if values[column] not in ("", "-"):
                table[column][(values["family"], values[column])][0 if found[key] else 1] += 1
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=SETS, required=True)
    parser.add_argument("--src", type=Path, default=Path("/work/corpus-src"), help="where releases are unpacked")
    parser.add_argument("--zgen-python", default=sys.executable, help="interpreter that has zgen installed")
    parser.add_argument("--tags", type=Path, default=TAGS)
    args = parser.parse_args(argv)
    try:
        tags = read_tags(args.tags)
        items = [i for i in read_manifest(HERE / "manifest.tsv") if i.set == args.set and i.label == "hazard"]
        if not any(key[0] == args.set for key in tags):
            raise BadInput(f"{args.tags}: no tags for set {args.set}")
        paths = locate(items, args.src, False)
        hits, failed = run_zgen(args.zgen_python, sorted(set(paths.values())))
    except BadInput as e:
        print(f"capabilities.py: {e}", file=sys.stderr)
        return 2
    score = match(items, paths, hits, failed)

    def key(item) -> tuple[str, ...]:
        span = str(item.line) if item.end == item.line else f"{item.line}-{item.end}"
        return (item.set, item.package, item.version, item.file, span, item.family)

    found = {key(i): True for i in score.found} | {key(i): False for i in score.missed}
    untagged = sum(k not in tags for k in found)
    print(f"set {args.set}: {sum(found.values())}/{len(found)} hazards found; {untagged} without tags")
    for column, counts in crossed(tags, found).items():
        print(f"\n{column:28} found  missed")
        for (family, value), (f, m) in sorted(counts.items()):
            print(f"  {family} {value:23} {f:5}  {m:6}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
