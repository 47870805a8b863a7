"""Score `zgen check` against the labelled corpus of real model code in manifest.tsv.

    python bench/corpus/score.py                               # dev set, sources in /work/corpus-src
    python bench/corpus/score.py --set transformers --show-misses
    python bench/corpus/score.py --zgen-python ../model/.venv/bin/python --json
    python bench/corpus/score.py --crash-check                 # every file of the labelled directories

Each manifest row labels one line of one file of one pinned library release as a
`hazard` or a `safe` look-alike of one rule family (ZG1, ZG2, ZG3). zgen runs once
over every labelled file of the chosen set. A finding *hits* an item when its code
starts with the item's family, it is in the item's file, and its rows span the
item's line (`location.row <= line <= end_location.row`; no tolerance beyond that).
An item may label a span `N-M` (a condition and the statement it governs): then a
finding hits when its rows overlap the span.
A hazard is *found* when some finding hits it; a safe item is *clean* when none
does. Findings that hit no item of their family are counted as unlabelled (shown,
not scored). Third-party sources live outside the repository, in
`--src/<package>-<version>/` (wheel contents, or an sdist unpacked without its top
folder); `--download` fetches missing ones with `pip download`.

Exit status: 0 when it ran (whatever the scores), 2 on bad input (a malformed
manifest, a missing source). When zgen fails on a file (exit status 2, a traceback, no
JSON), that file is named on stderr and its items are left out of the score and
counted as unscored.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
COLUMNS = ("set", "package", "version", "file", "line", "family", "code", "label", "why")
FAMILIES = ("ZG1", "ZG2", "ZG3")
LABELS = ("hazard", "safe")
SETS = ("dev", "transformers", "fresh", "blind2", "blind3", "blind4", "blind5", "blind6", "blind7", "blind8", "blind9", "blind10", "blind11", "blind12", "blind13", "blind14", "blind15", "blind16", "blind17", "blind18", "blind19", "blind20", "blind21", "blind22", "blind23", "blind24", "blind25", "blind26", "blind27", "blind28", "blind29", "blind30", "blind31", "blind32", "blind33", "blind34", "blind35", "blind36", "blind37", "blind38", "blind39", "blind40", "blind41", "blind42", "blind43", "blind44", "blind45", "blind46", "blind47", "blind48", "blind49", "blind50", "blind51", "blind52", "blind53", "blind54", "blind55", "blind56", "blind57", "blind58", "blind59", "blind60", "blind61", "blind62", "blind63", "blind64", "blind65", "blind66", "blind67", "blind68", "blind69", "blind70", "blind71", "blind72", "blind73", "blind74", "blind75", "transformers2")
REVIEW_COLUMNS = ("package", "version", "file", "line", "code", "verdict", "why")
VERDICTS = ("tp", "fp", "unsure")
DUMP_COLUMNS = ("package", "version", "file", "line", "code", "message")


class BadInput(Exception):
    """Input the scorer cannot use: the message names the file, line and key."""


@dataclass(frozen=True)
class Item:
    """One labelled line: where it is, which rule family it concerns and whether it is a hazard."""

    set: str
    package: str
    version: str
    file: str
    line: int
    end: int  # last line of the labelled span; equals `line` for a single line
    family: str
    code: str
    label: str
    why: str
    row: int  # line of the manifest, for messages


@dataclass(frozen=True)
class Hit:
    """One zgen finding reduced to what matching needs."""

    path: str
    code: str
    line: int
    end_line: int
    message: str = ""


@dataclass
class Score:
    """Result of matching findings to items."""

    found: list[Item] = field(default_factory=list)
    missed: list[Item] = field(default_factory=list)
    clean: list[Item] = field(default_factory=list)
    flagged: list[tuple[Item, Hit]] = field(default_factory=list)
    unlabelled: list[Hit] = field(default_factory=list)
    unscored: list[Item] = field(default_factory=list)


def tsv_rows(path: Path, columns: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, values by column) of each non-blank row of a TSV file with header `columns`.

    An unreadable file, a wrong header or a row with the wrong number of fields raises BadInput.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise BadInput(f"{path}: cannot read: {e.strerror or e}") from None
    rows = list(csv.reader(text.splitlines(), delimiter="\t", quoting=csv.QUOTE_NONE))
    if not rows or tuple(rows[0]) != columns:
        raise BadInput(f"{path}:1: header must be the tab-separated columns {', '.join(columns)}")
    for number, row in enumerate(rows[1:], start=2):
        if not row or not "".join(row).strip():
            continue
        if len(row) != len(columns):
            raise BadInput(f"{path}:{number}: expected {len(columns)} tab-separated fields, got {len(row)}")
        yield number, dict(zip(columns, (v.strip() for v in row)))


def read_manifest(path: Path) -> list[Item]:
    """Parse and validate the manifest; any bad row raises BadInput naming the row and the column."""
    items, seen = [], {}
    for number, values in tsv_rows(path, COLUMNS):
        for key, allowed in (("set", SETS), ("family", FAMILIES), ("label", LABELS)):
            if values[key] not in allowed:
                raise BadInput(f"{path}:{number}: {key} {values[key]!r} is not one of {', '.join(allowed)}")
        first, _, last = values["line"].partition("-")
        last = last or first
        if not (first.isdigit() and last.isdigit() and 1 <= int(first) <= int(last)):
            raise BadInput(f"{path}:{number}: line {values['line']!r} is not a line number N or a span N-M")
        if values["code"] and not values["code"].startswith(values["family"]):
            raise BadInput(f"{path}:{number}: code {values['code']!r} is not in family {values['family']}")
        for key in ("package", "version", "file", "why"):
            if not values[key]:
                raise BadInput(f"{path}:{number}: {key} is empty")
        item = Item(**{**values, "line": int(first)}, end=int(last), row=number)
        where = (item.package, item.version, item.file, item.line, item.family)
        if where in seen:
            raise BadInput(f"{path}:{number}: same file, line and family as row {seen[where]}")
        seen[where] = number
        items.append(item)
    return items


@dataclass(frozen=True)
class Verdict:
    """A judgement of one unlabelled finding, made by reading the code after zgen reported it."""

    verdict: str  # tp, fp or unsure
    why: str


ReviewKey = tuple[str, str, str, int, str]  # package, version, file, line, code


def read_reviewed(path: Path) -> dict[ReviewKey, Verdict]:
    """Parse reviewed.tsv (judged unlabelled findings); a bad row raises BadInput naming the row and the column."""
    judged: dict[ReviewKey, Verdict] = {}
    for number, values in tsv_rows(path, REVIEW_COLUMNS):
        if values["verdict"] not in VERDICTS:
            raise BadInput(f"{path}:{number}: verdict {values['verdict']!r} is not one of {', '.join(VERDICTS)}")
        if not values["line"].isdigit():
            raise BadInput(f"{path}:{number}: line {values['line']!r} is not a line number")
        if values["code"][:3] not in FAMILIES:
            raise BadInput(f"{path}:{number}: code {values['code']!r} is not in a family {', '.join(FAMILIES)}")
        for key in ("package", "version", "file", "why"):
            if not values[key]:
                raise BadInput(f"{path}:{number}: {key} is empty")
        key = (values["package"], values["version"], values["file"], int(values["line"]), values["code"])
        if key in judged:
            raise BadInput(f"{path}:{number}: the same finding (file, line, code) is judged twice")
        judged[key] = Verdict(values["verdict"], values["why"])
    return judged


def package_dir(src: Path, package: str, version: str) -> Path | None:
    """The unpacked release of `package` under `src`, trying the `-`/`_` spellings of its name."""
    for name in {package, package.replace("-", "_"), package.replace("_", "-")}:
        candidate = src / f"{name}-{version}"
        if candidate.is_dir():
            return candidate
    return None


def download(src: Path, package: str, version: str) -> Path:
    """Fetch `package==version` the way README.md's sources table says, unpacked under `src`."""
    sys.path.insert(0, str(HERE))
    from fetch_sources import Source, fetch, sources  # noqa: PLC0415 - a sibling script, needed only here

    known = {(s.package, s.version): s for s in sources(HERE / "README.md")}
    source = known.get((package, version), Source(package, version, ""))
    outcome = fetch(source, src, [sys.executable, "-m", "pip"])
    target = src / source.folder
    if not target.is_dir():
        raise BadInput(f"{package}=={version}: {outcome}")
    return target


def locate(items: list[Item], src: Path, fetch: bool) -> dict[tuple[str, str, str], Path]:
    """Absolute path of every labelled file; a missing release or file raises BadInput."""
    roots: dict[tuple[str, str], Path] = {}
    paths = {}
    for item in items:
        release = (item.package, item.version)
        if release not in roots:
            root = package_dir(src, *release)
            if root is None and fetch and _is_commit(item.version):
                raise BadInput(
                    f"{item.package} is pinned to commit {item.version}, not a PyPI release: unpack that commit of its"
                    f" GitHub repository into {src}/{item.package}-{item.version}/ (git archive), see README.md"
                )
            if root is None and fetch:
                root = download(src, *release)
            if root is None:
                raise BadInput(
                    f"{item.package}=={item.version} is not under {src} (expected {src}/{item.package}-{item.version}/;"
                    f" rerun with --download, or: pip download --no-deps {item.package}=={item.version})"
                )
            roots[release] = root
        path = roots[release] / item.file
        if not path.is_file():
            raise BadInput(f"manifest row {item.row}: {item.file} is not in {roots[release]}")
        paths[(item.package, item.version, item.file)] = path.resolve()
    return paths


def _is_commit(version: str) -> bool:
    """Does `version` look like an abbreviated git commit rather than a release number?"""
    hexdigits = set("0123456789abcdef")
    return len(version) >= 7 and set(version) <= hexdigits and bool(set(version) & set("abcdef"))


def run_zgen(python: str, files: list[Path]) -> tuple[list[Hit], dict[str, str]]:
    """Findings of `python -m zgen check` over `files`, and the files zgen failed on with the reason.

    zgen runs once over all files (no cache, in a scratch directory). Only when that run
    fails is each file rerun alone, so that one crashing file costs its own items, not
    the whole score.
    """
    if os.sep in python:
        python = str(Path(python).absolute())  # zgen runs in a scratch directory: a relative path would miss
    probe = subprocess.run([python, "-c", "import importlib.util, sys; sys.exit(not importlib.util.find_spec('zgen'))"],
                           capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        raise BadInput(f"{python} cannot import zgen (use --zgen-python with the interpreter zgen is installed in)")
    hits, problem = _run_json(python, files)
    if problem is None:
        return hits, {}
    hits, failed = [], {}
    for f in files:
        found, problem = _run_json(python, [f])
        if problem is None:
            hits += found
        else:
            failed[str(f)] = problem
    if len(failed) == len(files):
        raise BadInput(f"zgen failed on every file, e.g. {files[0]}: {failed[str(files[0])]}")
    return hits, failed


def _run_json(python: str, files: list[Path]) -> tuple[list[Hit], str | None]:
    """One zgen run: its findings, or no findings and why the run failed (exit 2, traceback, no JSON)."""
    with tempfile.TemporaryDirectory(prefix="zgen-corpus-") as cwd:
        proc = subprocess.run(
            [python, "-m", "zgen", "check", "--output-format", "json", "--exit-zero", "--no-cache",
             *map(str, files)],
            cwd=cwd, capture_output=True, text=True, check=False,
        )
    last = (proc.stderr.strip().splitlines() or [""])[-1][:300]
    if proc.returncode not in (0, 1):
        return [], f"exit {proc.returncode}: {last}"
    if "Traceback (most recent call last)" in proc.stderr:
        return [], f"traceback: {last}"
    try:
        return [to_hit(f) for f in json.loads(proc.stdout)], None
    except (json.JSONDecodeError, KeyError, TypeError):
        return [], f"no JSON report: {proc.stdout.strip()[:200]!r} {last}"


def to_hit(finding: dict) -> Hit:
    """Reduce one JSON finding (ruff-like: filename, code, location.row, end_location.row) to a Hit."""
    start = finding["location"]["row"]
    end = (finding.get("end_location") or {}).get("row") or start
    return Hit(str(Path(finding["filename"]).resolve()), finding["code"] or "", start, max(start, end),
               finding.get("message", ""))


def match(items: list[Item], paths: dict[tuple[str, str, str], Path], hits: list[Hit],
          failed: dict[str, str] | None = None) -> Score:
    """Decide for every item whether a finding of its family spans its line; collect the unlabelled findings.

    Items in files zgen failed on (`failed`) are not scored but listed as unscored.
    """
    by_place: dict[tuple[str, str], list[Hit]] = defaultdict(list)
    for hit in hits:
        by_place[(hit.path, hit.code[:3])].append(hit)
    score, used = Score(), set()
    for item in items:
        path = str(paths[(item.package, item.version, item.file)])
        if failed and path in failed:
            score.unscored.append(item)
            continue
        hitting = [h for h in by_place[(path, item.family)] if h.line <= item.end and item.line <= h.end_line]
        used.update(hitting)
        if item.label == "hazard":
            (score.found if hitting else score.missed).append(item)
        elif hitting:
            score.flagged.append((item, hitting[0]))
        else:
            score.clean.append(item)
    labelled = {str(p) for p in paths.values()}
    score.unlabelled = [h for h in hits if h not in used and h.path in labelled and h.code[:3] in FAMILIES]
    return score


def dump_unlabelled(score: Score, paths: dict[tuple[str, str, str], Path], out: Path) -> None:
    """Write the unlabelled findings as TSV (DUMP_COLUMNS), sorted, one per line, for judging."""
    by_path = {str(p): key for key, p in paths.items()}
    rows = sorted({(*by_path[h.path], h.line, h.code, " ".join(h.message.split())) for h in score.unlabelled})
    lines = ["\t".join(DUMP_COLUMNS)] + ["\t".join(map(str, row)) for row in rows]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")


def precision(score: Score, paths: dict[tuple[str, str, str], Path], judged: dict[ReviewKey, Verdict]) -> dict:
    """Precision per family over judged findings: found hazards and reviewed `tp` against flagged safe items and
    reviewed `fp`. The reviewed verdicts were made after seeing zgen's output, unlike the manifest labels."""
    counts: dict[str, dict[str, int]] = {f: defaultdict(int) for f in FAMILIES}
    for item in score.found:
        counts[item.family]["tp"] += 1
    for item, _ in score.flagged:
        counts[item.family]["fp"] += 1
    by_path = {str(p): key for key, p in paths.items()}
    for hit in set(score.unlabelled):
        verdict = judged.get((*by_path[hit.path], hit.line, hit.code))
        counts[hit.code[:3]][verdict.verdict if verdict else "unjudged"] += 1
    result = {}
    for family, c in counts.items():
        decided = c["tp"] + c["fp"]
        result[family] = {"tp": c["tp"], "fp": c["fp"], "unsure": c["unsure"], "unjudged": c["unjudged"],
                          "precision": c["tp"] / decided if decided else None}
    return result


def print_precision(data: dict) -> None:
    """The precision table, marked as judged after seeing zgen's output."""
    print("precision per family (JUDGED AFTER SEEING zgen's OUTPUT: labelled items + reviewed.tsv):")
    for family, r in data.items():
        print(f"  {family}  {ratio(r['tp'], r['tp'] + r['fp']):>16}  tp {r['tp']}, fp {r['fp']},"
              f" unsure {r['unsure']}, not judged {r['unjudged']}")


def ratio(a: int, b: int) -> str:
    """`a/b = r` with two decimals, or `-` when there is nothing to divide."""
    return f"{a}/{b} = {a / b:.2f}" if b else "-"


def summary(score: Score) -> dict:
    """Recall and clean rate per family, per package and in total, as plain data."""
    groups: dict[str, dict[str, dict[str, int]]] = {"family": defaultdict(lambda: defaultdict(int)),
                                                     "package": defaultdict(lambda: defaultdict(int))}
    everything = [(i, "found") for i in score.found] + [(i, "missed") for i in score.missed]
    everything += [(i, "clean") for i in score.clean] + [(i, "flagged") for i, _ in score.flagged]
    total: dict[str, int] = defaultdict(int)
    for item, outcome in everything:
        for key, name in (("family", item.family), ("package", f"{item.package}=={item.version}")):
            groups[key][name][outcome] += 1
        total[outcome] += 1

    def rates(c: dict[str, int]) -> dict:
        hazards, safe = c["found"] + c["missed"], c["clean"] + c["flagged"]
        return {"found": c["found"], "hazards": hazards, "recall": c["found"] / hazards if hazards else None,
                "clean": c["clean"], "safe": safe, "clean_rate": c["clean"] / safe if safe else None}

    unlabelled: dict[str, int] = defaultdict(int)
    for hit in score.unlabelled:
        unlabelled[hit.code[:3]] += 1
    return {
        "family": {k: rates(v) for k, v in sorted(groups["family"].items())},
        "package": {k: rates(v) for k, v in sorted(groups["package"].items())},
        "total": rates(total),
        "unlabelled_findings": dict(sorted(unlabelled.items())),
        "unscored_items": len(score.unscored),
    }


def print_table(data: dict, title: str) -> None:
    """The human-readable score table."""
    print(title)
    width = max([len(k) for k in data["package"]] + [8])
    print(f"{'':{width}}  {'recall (found/hazards)':>24}  {'clean (clean/safe)':>22}")
    for section in ("family", "package"):
        for name, r in data[section].items():
            print(f"{name:{width}}  {ratio(r['found'], r['hazards']):>24}  {ratio(r['clean'], r['safe']):>22}")
        print()
    t = data["total"]
    print(f"{'total':{width}}  {ratio(t['found'], t['hazards']):>24}  {ratio(t['clean'], t['safe']):>22}")
    extra = ", ".join(f"{k} {v}" for k, v in data["unlabelled_findings"].items()) or "none"
    print(f"findings on unlabelled lines of the labelled files (not scored): {extra}")
    if data["unscored_items"]:
        print(f"NOT SCORED: {data['unscored_items']} items in {len(data['failed_files'])} files zgen failed on"
              " (listed on stderr)")


def print_misses(score: Score) -> None:
    """List missed hazards and flagged safe items, with the finding that flagged each."""
    print("\nmissed hazards:")
    for i in sorted(score.missed, key=lambda i: (i.family, i.package, i.file, i.line)):
        print(f"  {i.family} {i.code or '-':5} {i.package}/{i.file}:{_span(i)}  {i.why}")
    print("\nsafe items flagged:")
    for i, h in sorted(score.flagged, key=lambda p: (p[0].family, p[0].package, p[0].file, p[0].line)):
        print(f"  {h.code} {i.package}/{i.file}:{_span(i)}  {h.message[:160]}")


def _span(item: Item) -> str:
    return str(item.line) if item.end == item.line else f"{item.line}-{item.end}"


def crash_check(python: str, items: list[Item], paths: dict[tuple[str, str, str], Path]) -> int:
    """Run zgen on every .py file of each directory holding a labelled file; list files it fails on.

    zgen first runs once per directory; only a directory where that fails is rerun
    file by file, so the culprit files are named without one interpreter start per file.
    """
    dirs = sorted({paths[(i.package, i.version, i.file)].parent for i in items})
    failures, checked = [], 0
    for d in dirs:
        files = sorted(d.glob("*.py"))
        checked += len(files)
        if _run_json(python, files)[1] is None:
            continue
        for f in files:
            problem = _run_json(python, [f])[1]
            if problem is not None:
                failures.append((f, problem))
    print(f"crash check: {checked} files in {len(dirs)} directories, {len(failures)} failed")
    for f, problem in failures:
        print(f"  {f}: {problem}")
    return len(failures)


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", type=Path, default=Path("/work/corpus-src"), help="where releases are unpacked")
    parser.add_argument("--manifest", type=Path, default=HERE / "manifest.tsv")
    parser.add_argument("--set", choices=(*SETS, "all"), default="dev")
    parser.add_argument("--zgen-python", default=sys.executable, help="interpreter that has zgen installed")
    parser.add_argument("--show-misses", action="store_true", help="list missed hazards and flagged safe items")
    parser.add_argument("--json", action="store_true", help="print the scores as JSON")
    parser.add_argument("--download", action="store_true", help="pip download releases missing under --src")
    parser.add_argument("--reviewed", type=Path, default=HERE / "reviewed.tsv",
                        help="judged unlabelled findings, for the precision table (skipped when the file is absent)")
    parser.add_argument("--dump-unlabelled", type=Path, metavar="FILE",
                        help="write the findings on unlabelled lines as TSV to FILE, for judging")
    parser.add_argument("--crash-check", action="store_true",
                        help="run zgen on every file of the labelled directories and list crashes")
    args = parser.parse_args(argv)
    try:
        items = [i for i in read_manifest(args.manifest) if args.set in ("all", i.set)]
        if not items:
            raise BadInput(f"{args.manifest}: no items in set {args.set}")
        paths = locate(items, args.src, args.download)
        if args.crash_check:
            crash_check(args.zgen_python, items, paths)
            return 0
        judged = read_reviewed(args.reviewed) if args.reviewed.exists() else {}
        hits, failed = run_zgen(args.zgen_python, sorted(set(paths.values())))
    except BadInput as e:
        print(f"score.py: {e}", file=sys.stderr)
        return 2
    for path, problem in sorted(failed.items()):
        print(f"score.py: zgen failed on {path}: {problem}", file=sys.stderr)
    score = match(items, paths, hits, failed)
    data = summary(score)
    data["failed_files"] = failed
    data["precision_judged_after_output"] = precision(score, paths, judged)
    if args.dump_unlabelled:
        dump_unlabelled(score, paths, args.dump_unlabelled)
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        print_table(data, f"set {args.set}: {len(items)} items, {len(set(paths.values()))} files")
        print_precision(data["precision_judged_after_output"])
    if args.show_misses:
        print_misses(score)
    return 0


if __name__ == "__main__":
    sys.exit(main())
