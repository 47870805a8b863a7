"""Score `zgen check --trace` on the trace corpus: per-family recall, clean rate, per-case table, unmatched findings.

Each case runs exactly as the issue's evaluation runs it, from this directory:

    zgen check --trace --model cases/CASE.py:build_model --inputs cases/CASE.py:inputs
        [--entry cases/CASE.py:entry] --config ds.json --world-size 2 --seq-len 16 --output-format json

A hazard row of manifest.tsv is found when a finding of the case has a code of the row's family (ZG1/ZG2/ZG3),
a filename that ends with the row's `file` (at a path-component boundary) and a row within `line` +- 3. The
strict score uses `file`/`line` only; the lenient one also accepts the row's `alt` locations (`file:line;...`).
A clean case is clean when none of its findings is a ZG1/ZG2/ZG3 error or warning, and zgen ran (exit 0 or 1).

    python score.py                         # zgen from PATH, every case
    python score.py --python /work/venv-corpus/bin/python CASE ...
    python score.py --zgen "python -m zgen" --timeout 120
    python score.py --from-json DIR         # read DIR/CASE.json instead of running zgen (for testing)
    python score.py --save-json DIR         # keep each case's JSON output
    python score.py --set blind2            # another set: blind2/{cases,manifest.tsv,ds.json}, run from blind2/
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
FAMILIES = ("ZG1", "ZG2", "ZG3")
TOLERANCE = 3


@dataclass(frozen=True)
class Location:
    file: str
    line: int


@dataclass(frozen=True)
class Row:
    case: str
    package: str
    version: str
    family: str
    label: str
    where: Location | None
    alt: tuple[Location, ...]
    why: str


@dataclass
class Outcome:
    case: str
    rc: int | None
    findings: list[dict] = field(default_factory=list)
    error: str = ""


def parse_location(text: str, where: str) -> Location:
    file, _, line = text.rpartition(":")
    if not file or not line.isdigit():
        raise SystemExit(f"{where}: alt location {text!r} is not FILE:LINE")
    return Location(file, int(line))


def load_manifest(path: Path) -> list[Row]:
    rows = []
    with open(path, newline="") as f:
        reader = csv.DictReader(f, delimiter="\t")
        for n, r in enumerate(reader, start=2):
            where = f"{path}:{n}"
            if r["label"] not in ("hazard", "clean"):
                raise SystemExit(f"{where}: label must be hazard or clean, not {r['label']!r}")
            loc = None
            if r["label"] == "hazard":
                if r["family"] not in FAMILIES or not r["line"].isdigit() or not r["file"]:
                    raise SystemExit(f"{where}: a hazard needs a file, a line number and a family in {FAMILIES}")
                loc = Location(r["file"], int(r["line"]))
            alt = tuple(parse_location(a, where) for a in (r.get("alt") or "").split(";") if a)
            rows.append(Row(r["case"], r["package"], r["version"], r["family"], r["label"], loc, alt, r["why"]))
    return rows


def path_matches(filename: str, suffix: str) -> bool:
    filename = filename.replace(os.sep, "/")
    return filename == suffix or filename.endswith("/" + suffix)


def family_of(code: str) -> str | None:
    return next((f for f in FAMILIES if str(code).startswith(f)), None)


def hits(finding: dict, family: str, loc: Location) -> bool:
    return (family_of(finding.get("code", "")) == family
            and path_matches(finding.get("filename", ""), loc.file)
            and abs(int(finding.get("location", {}).get("row", -10**9)) - loc.line) <= TOLERANCE)


def row_found(row: Row, findings: list[dict], lenient: bool) -> bool:
    places = (row.where,) + (row.alt if lenient else ())
    return any(hits(f, row.family, loc) for f in findings for loc in places)


def is_alarm(finding: dict) -> bool:
    return family_of(finding.get("code", "")) is not None and finding.get("severity") in ("error", "warning")


def parse_output(case: str, rc: int | None, stdout: str) -> Outcome:
    if rc not in (0, 1):
        return Outcome(case, rc, error=f"exit status {rc}")
    try:
        data = json.loads(stdout)
    except json.JSONDecodeError as e:
        return Outcome(case, rc, error=f"no JSON on stdout ({e})")
    if not isinstance(data, list):
        return Outcome(case, rc, error="JSON output is not a list of findings")
    return Outcome(case, rc, findings=data)


def case_command(zgen: list[str], case: str, has_entry: bool) -> list[str]:
    path = f"cases/{case}.py"
    cmd = zgen + ["check", "--trace", "--model", f"{path}:build_model", "--inputs", f"{path}:inputs"]
    if has_entry:
        cmd += ["--entry", f"{path}:entry"]
    return cmd + ["--config", "ds.json", "--world-size", "2", "--seq-len", "16", "--output-format", "json"]


def set_root(name: str | None) -> Path:
    """The directory of a case set: this one (the first set) or a named set beside its cases/ (e.g. blind2)."""
    if not name:
        return HERE
    root = HERE / name
    if not (root / "manifest.tsv").is_file() or not (root / "cases").is_dir():
        raise SystemExit(f"{root}: not a case set (needs manifest.tsv and cases/)")
    return root


def has_entry(case: str, root: Path = HERE) -> bool:
    text = (root / "cases" / f"{case}.py").read_text()
    return "\ndef entry(" in text


def run_case(zgen: list[str], case: str, timeout: float, save: Path | None, root: Path = HERE) -> Outcome:
    cmd = case_command(zgen, case, has_entry(case, root))
    try:
        proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return Outcome(case, None, error=f"timed out after {timeout:.0f}s")
    if save:
        (save / f"{case}.json").write_text(proc.stdout)
        (save / f"{case}.stderr").write_text(proc.stderr)
    out = parse_output(case, proc.returncode, proc.stdout)
    if out.error and proc.stderr.strip():
        out.error += ": " + proc.stderr.strip().splitlines()[-1][:200]
    return out


def read_case(directory: Path, case: str) -> Outcome:
    path = directory / f"{case}.json"
    if not path.exists():
        return Outcome(case, None, error=f"{path} missing")
    return parse_output(case, 0, path.read_text())


def score(rows: list[Row], outcomes: dict[str, Outcome]) -> dict:
    by_case: dict[str, list[Row]] = {}
    for r in rows:
        by_case.setdefault(r.case, []).append(r)
    result = {"families": {}, "cases": [], "unmatched": [], "clean": [0, 0]}
    tally = {f: {"strict": 0, "lenient": 0, "total": 0} for f in FAMILIES}
    for case, case_rows in sorted(by_case.items()):
        out = outcomes[case]
        hazards = [r for r in case_rows if r.label == "hazard"]
        entry = {"case": case, "kind": "hazard" if hazards else "clean", "rc": out.rc, "error": out.error,
                 "rows": [], "alarms": 0}
        for r in hazards:
            strict = row_found(r, out.findings, lenient=False)
            lenient = row_found(r, out.findings, lenient=True)
            t = tally[r.family]
            t["total"] += 1
            t["strict"] += strict
            t["lenient"] += lenient
            entry["rows"].append({"family": r.family, "file": r.where.file, "line": r.where.line,
                                  "strict": strict, "lenient": lenient})
        if not hazards:
            alarms = [f for f in out.findings if is_alarm(f)]
            entry["alarms"] = len(alarms)
            entry["clean"] = not alarms and not out.error
            result["clean"][0] += entry["clean"]
            result["clean"][1] += 1
        for f in out.findings:
            fam = family_of(f.get("code", ""))
            if fam is None:
                continue
            places = [(r.family, loc) for r in hazards for loc in (r.where,) + r.alt]
            if not any(hits(f, fam_, loc) for fam_, loc in places):
                result["unmatched"].append({"case": case, "code": f.get("code"), "severity": f.get("severity"),
                                            "filename": f.get("filename"),
                                            "row": f.get("location", {}).get("row"),
                                            "message": f.get("message", "")})
        result["cases"].append(entry)
    result["families"] = tally
    return result


def ratio(a: int, b: int) -> str:
    return f"{a}/{b} = {a / b:.2f}" if b else "0/0"


def print_report(result: dict) -> None:
    print("family  strict recall       lenient recall")
    tot = {"strict": 0, "lenient": 0, "total": 0}
    for fam, t in result["families"].items():
        print(f"{fam:6}  {ratio(t['strict'], t['total']):18}  {ratio(t['lenient'], t['total'])}")
        for k in tot:
            tot[k] += t[k]
    print(f"{'all':6}  {ratio(tot['strict'], tot['total']):18}  {ratio(tot['lenient'], tot['total'])}")
    print(f"clean cases without a ZG1-3 error/warning: {ratio(*result['clean'])}")
    print()
    print(f"{'case':40} {'kind':6} {'rc':>4}  result")
    for c in result["cases"]:
        if c["kind"] == "hazard":
            parts = [f"{r['family']} {Path(r['file']).name}:{r['line']} "
                     + ("found" if r["strict"] else "alt" if r["lenient"] else "MISSED") for r in c["rows"]]
            text = "; ".join(parts)
        else:
            text = "clean" if c["clean"] else f"NOT CLEAN ({c['alarms']} alarms)"
        if c["error"]:
            text += f"  [{c['error']}]"
        print(f"{c['case']:40} {c['kind']:6} {str(c['rc']):>4}  {text}")
    print()
    print(f"findings of ZG1-3 matching no label ({len(result['unmatched'])}): possible false alarms or unlabelled")
    for u in result["unmatched"]:
        print(f"  {u['case']}: {u['code']} {u['severity']} {u['filename']}:{u['row']} {u['message'][:100]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", help="case names (default: all in the manifest)")
    parser.add_argument("--set", dest="case_set", metavar="NAME",
                        help="score the case set in NAME/ (e.g. blind2) instead of this directory's")
    parser.add_argument("--manifest", type=Path, help="manifest (default: the set's manifest.tsv)")
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--zgen", default="zgen", help="zgen command line (default: zgen)")
    how.add_argument("--python", help="run PYTHON -m zgen")
    how.add_argument("--from-json", type=Path, help="read DIR/CASE.json instead of running zgen")
    parser.add_argument("--save-json", type=Path, help="keep each case's stdout/stderr in DIR")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per case (default 300)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)

    root = set_root(args.case_set)
    rows = load_manifest(args.manifest or root / "manifest.tsv")
    known = sorted({r.case for r in rows})
    cases = args.cases or known
    unknown = [c for c in cases if c not in known]
    if unknown:
        raise SystemExit(f"not in the manifest: {', '.join(unknown)}")
    rows = [r for r in rows if r.case in cases]
    zgen = [args.python, "-m", "zgen"] if args.python else shlex.split(args.zgen)
    if args.save_json:
        args.save_json.mkdir(parents=True, exist_ok=True)
    outcomes = {}
    for case in cases:
        if args.from_json:
            outcomes[case] = read_case(args.from_json, case)
        else:
            outcomes[case] = run_case(zgen, case, args.timeout, args.save_json, root)
            print(f"ran {case}: rc {outcomes[case].rc} {outcomes[case].error}", file=sys.stderr)
    result = score(rows, outcomes)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_report(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
