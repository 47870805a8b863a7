"""Every finding `zgen check` makes on the corpus, to compare two versions of the checker.

    python bench/corpus/snapshot.py dump /tmp/before.json                  # labelled files + transformers models
    python bench/corpus/snapshot.py dump /tmp/after.json --python .venv/bin/python
    python bench/corpus/snapshot.py diff /tmp/before.json /tmp/after.json  # exit 1 when they differ

`dump` runs `PYTHON -m zgen check --output-format json --exit-zero --no-cache` (in a
scratch directory, so paths are absolute) over every file the manifest labels, of every
set but the still-blind ones (`_BLIND`: blind11, blind13, blind17, blind18, blind19, blind20; left out so that
refactor diffs do not show their files),
plus every `transformers/models/*/modeling_*.py` of the pinned transformers release, and
writes one sorted JSON list of findings (path, rows, columns, code, message, help).
A refactor of the checker must leave it byte for byte the same, or explain each
difference `diff` prints.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from score import BadInput, locate, read_manifest  # noqa: E402

_TRANSFORMERS = ("transformers", "4.48.3")
_CHUNK = 400  # files per zgen run (argument lists stay short)
_BLIND = ("blind11", "blind13", "blind17", "blind18", "blind19", "blind20")  # sets kept out of the dump while they are still blind


def corpus_files(src: Path) -> list[Path]:
    """The labelled files of every set but the blind ones, and the pinned transformers release's model files, sorted."""
    items = [i for i in read_manifest(HERE / "manifest.tsv") if i.set not in _BLIND]
    files = set(locate(items, src, fetch=False).values())
    models = src / f"{_TRANSFORMERS[0]}-{_TRANSFORMERS[1]}" / "transformers" / "models"
    files.update(p.resolve() for p in models.glob("*/modeling_*.py"))
    return sorted(files)


def dump(python: str, files: list[Path]) -> list[dict]:
    """Every finding of zgen over `files`, as sorted plain records."""
    found: list[dict] = []
    for start in range(0, len(files), _CHUNK):
        chunk = files[start:start + _CHUNK]
        with tempfile.TemporaryDirectory(prefix="zgen-snapshot-") as cwd:
            proc = subprocess.run(
                [python, "-m", "zgen", "check", "--output-format", "json", "--exit-zero", "--no-cache",
                 *map(str, chunk)],
                cwd=cwd, capture_output=True, text=True, check=False,
            )
        if proc.returncode not in (0, 1) or "Traceback (most recent call last)" in proc.stderr:
            raise BadInput(f"zgen failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
        for f in json.loads(proc.stdout):
            end = f.get("end_location") or {}
            found.append({
                "path": f["filename"], "line": f["location"]["row"], "column": f["location"]["column"],
                "end_line": end.get("row"), "end_column": end.get("column"), "code": f["code"],
                "message": f["message"], "help": f.get("help") or "", "fix": f.get("fix"),
            })
    found.sort(key=lambda f: (f["path"], f["line"], f["column"], f["code"], f["message"]))
    return found


def _key(finding: dict) -> tuple:
    return tuple(finding[k] for k in ("path", "line", "column", "end_line", "end_column", "code", "message", "help")) + (json.dumps(finding.get("fix"), sort_keys=True),)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump", help="write every finding over the corpus to a JSON file")
    d.add_argument("out", type=Path)
    d.add_argument("--python", default=sys.executable, help="interpreter zgen is installed in")
    d.add_argument("--src", type=Path, default=Path("/work/corpus-src"), help="where the corpus sources are unpacked")
    c = sub.add_parser("diff", help="print the findings only one of two dumps has; exit 1 when there are any")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "dump":
            files = corpus_files(args.src)
            found = dump(args.python, files)
            args.out.write_text(json.dumps(found, indent=0, sort_keys=True) + "\n", encoding="utf-8")
            print(f"{len(found)} findings over {len(files)} files -> {args.out}")
            return 0
        before = {_key(f) for f in json.loads(args.before.read_text(encoding="utf-8"))}
        after = {_key(f) for f in json.loads(args.after.read_text(encoding="utf-8"))}
        for sign, rows in (("-", before - after), ("+", after - before)):
            for row in sorted(rows):
                print(f"{sign} {row[0]}:{row[1]}:{row[2]}: {row[5]} {row[6]}")
        print(f"{len(before)} before, {len(after)} after, {len(before - after)} gone, {len(after - before)} new")
        return 1 if before != after else 0
    except BadInput as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
