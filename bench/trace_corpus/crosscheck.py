"""Where `zgen check` (static) and `zgen check --trace` disagree, statement by statement, on runnable models.

For each case (the runnable cases of `cases/`, the six transformers families `plan`/`emit` handle in
`crosscheck/hf_families.py`, and `examples/models/`), three steps, each in a subprocess of `--python`:

1. `--cover`: the case run plainly (build, one training step, the entry), every line of non-torch code that ran
   recorded, and the files of the model's module classes (their whole MRO outside torch);
2. `zgen check --trace` as the evaluation runs it: the trace's findings (source `trace` or `both`);
3. `zgen check` (static) over the case's files, the module files and every file the trace reported in.

A static and a trace finding agree when they are of one family (ZG1/ZG2/ZG3), in one file, and the trace's
statement meets the static finding's lines +-3 (the rule `zgen check --trace` merges by). Printed per case:
agreements, static findings on statements that ran but the trace did not report (`static only`), static
findings on statements that never ran (not a disagreement: the trace cannot see them; counted), and trace
findings the static check does not make (`trace only`).

    python crosscheck.py --python /work/venv-corpus/bin/python [CASE ...] [--json OUT.json]
    python crosscheck.py --from-json OUT.json          # print again from saved results
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
FAMILIES = ("ZG1", "ZG2", "ZG3")
TOLERANCE = 3
# The `source` of a finding the trace made, as `--output-format json` writes it (`zgen.findings.Source`): seen by
# the trace alone, or confirmed by it at a statement the static check found too.
TRACED = ("trace", "static+trace")


@dataclass(frozen=True)
class Case:
    name: str
    model: str  # PATH:FUNCTION, relative to HERE
    inputs: str | None = None
    loss: str | None = None
    entry: str | None = None

    def flags(self) -> list[str]:
        out = ["--model", self.model]
        for flag, value in (("--inputs", self.inputs), ("--loss", self.loss), ("--entry", self.entry)):
            if value:
                out += [flag, value]
        return out


def cases() -> list[Case]:
    out = []
    for path in sorted((HERE / "cases").glob("*.py")):
        if path.name.startswith("_"):
            continue
        rel = f"cases/{path.name}"
        names = {n.name for n in ast.parse(path.read_text()).body if isinstance(n, ast.FunctionDef)}
        out.append(Case(path.stem, f"{rel}:build_model", f"{rel}:inputs", None,
                        f"{rel}:entry" if "entry" in names else None))
    hf = "crosscheck/hf_families.py"
    for family, inputs in (("bert", "text_inputs"), ("t5", "text_inputs"), ("bart", "text_inputs"),
                           ("mixtral", "text_inputs"), ("vit", "vit_inputs"), ("clip", "clip_inputs")):
        out.append(Case(f"hf_{family}", f"{hf}:{family}", f"{hf}:{inputs}"))
    examples = os.path.relpath(REPO / "examples" / "models", HERE)
    for path in sorted((REPO / "examples" / "models").glob("*.py")):
        rel = f"{examples}/{path.name}"
        names = {n.name for n in ast.parse(path.read_text()).body if isinstance(n, ast.FunctionDef)}
        loss = next((n for n in ("cross_entropy", "clip_loss") if n in names), None)
        out.append(Case(f"example_{path.stem}", f"{rel}:build_model",
                        f"{rel}:make_inputs" if "make_inputs" in names else None, f"{rel}:{loss}" if loss else None))
    return out


# -- 1. coverage (runs in the case's environment) --------------------------------------------

def cover(spec: dict) -> dict:
    """Run the case plainly; the lines run per file, and the files of the model's module classes."""
    import inspect
    import random

    import torch

    from zgen.plan.frames import is_user_file
    from zgen.plan.trace import Target, call_arguments, inputs_batch, load_callable, step_loss, synthetic_inputs, \
        vocab_size

    root = Path.cwd()
    lines: dict[str, set[int]] = {}

    def local(frame, event, arg):
        if event == "line":
            lines.setdefault(frame.f_code.co_filename, set()).add(frame.f_lineno)
        return local

    def tracer(frame, event, arg):
        return local if event == "call" and is_user_file(frame.f_code.co_filename) else None

    def target(text: str, option: str):
        path, _, fn = text.rpartition(":")
        return Target(path, fn, option)

    import tempfile

    import torch.distributed as dist

    if not dist.is_initialized():  # code that asks for its rank or calls a collective, as in check_cases.py
        dist.init_process_group("gloo", init_method=f"file://{tempfile.mktemp(prefix='crosscheck_store')}", rank=0,
                                world_size=1)
    torch.manual_seed(0)
    random.seed(0)
    sys.settrace(tracer)
    try:
        model = load_callable(target(spec["model"], "--model"), root)()
        gen = torch.Generator().manual_seed(0)
        if spec["inputs"]:
            batch = inputs_batch(load_callable(target(spec["inputs"], "--inputs"), root), target(spec["inputs"], "--inputs"),
                                 2, 16, gen)
        else:
            batch = synthetic_inputs(vocab_size(model), 2, 16, gen)
        args, kwargs = call_arguments(batch)
        model.train()
        out = model(*args, **kwargs)
        loss_fn = (load_callable(target(spec["loss"], "--loss"), root), target(spec["loss"], "--loss")) \
            if spec["loss"] else None
        loss = step_loss(out, loss_fn, kwargs if kwargs else args, "the batch")
        if loss.requires_grad:
            loss.backward()
        if spec["entry"]:
            load_callable(target(spec["entry"], "--entry"), root)(model, batch)
    finally:
        sys.settrace(None)
    files = set()
    for m in model.modules():
        for cls in type(m).__mro__:
            if cls.__module__.startswith(("torch.", "builtins")) or cls is object:
                continue
            try:
                f = inspect.getsourcefile(cls)
            except (TypeError, OSError):
                continue
            if f and is_user_file(f):
                files.add(os.path.abspath(f))
    for text in (spec["model"], spec["inputs"], spec["loss"], spec["entry"]):
        if text:
            files.add(os.path.abspath(text.rpartition(":")[0]))
    return {"files": sorted(files), "lines": {os.path.abspath(f): sorted(v) for f, v in lines.items()}}


# -- 2 and 3: the two checks ----------------------------------------------------------------

def run_json(cmd: list[str], timeout: int) -> tuple[list[dict], str]:
    proc = subprocess.run(cmd, cwd=HERE, capture_output=True, text=True, timeout=timeout)
    try:
        return json.loads(proc.stdout or "[]"), ""
    except json.JSONDecodeError:
        return [], (proc.stderr.strip().splitlines() or ["no output"])[-1]


def family(code: str) -> str | None:
    return code[:3] if code[:3] in FAMILIES else None


def brief(f: dict) -> dict:
    return {"code": f["code"], "file": os.path.abspath(os.path.join(HERE, f["filename"])),
            "line": f["location"]["row"], "end": (f.get("end_location") or f["location"])["row"],
            "severity": f.get("severity"), "message": f["message"][:240]}


def check_case(case: Case, python: str, timeout: int) -> dict:
    spec = {"model": case.model, "inputs": case.inputs, "loss": case.loss, "entry": case.entry}
    proc = subprocess.run([python, __file__, "--cover", json.dumps(spec)], cwd=HERE, capture_output=True, text=True,
                          timeout=timeout)
    try:
        covered = json.loads(proc.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return {"case": case.name, "error": "cover: " + (proc.stderr.strip().splitlines() or ["no output"])[-1]}
    zgen = [python, "-m", "zgen", "check", "--output-format", "json", "--exit-zero", "--no-cache"]
    traced, error = run_json(zgen + ["--trace", *case.flags(), "--config", "ds.json", "--world-size", "2",
                                     "--seq-len", "16"], timeout)
    if error:
        return {"case": case.name, "error": "trace: " + error}
    trace = [brief(f) for f in traced if f.get("source") in TRACED and family(f["code"])]
    files = sorted(set(covered["files"]) | {t["file"] for t in trace})
    static_out, error = run_json(zgen + [*files, "ds.json"], timeout)
    if error:
        return {"case": case.name, "error": "static: " + error}
    static = [brief(f) for f in static_out if family(f["code"])]
    return {"case": case.name, "trace": trace, "static": static, "lines": covered["lines"], "files": files}


def compare(result: dict) -> dict:
    """Agreements and disagreements of one case's findings (see the module docstring)."""
    trace, static, ran = result["trace"], result["static"], result["lines"]

    def agree(s: dict, t: dict) -> bool:
        return family(s["code"]) == family(t["code"]) and s["file"] == t["file"] and \
            s["line"] - TOLERANCE <= t["end"] and t["line"] <= s["end"] + TOLERANCE

    both = [t for t in trace if any(agree(s, t) for s in static)]
    trace_only = [t for t in trace if t not in both]
    static_only, not_run = [], 0
    for s in static:
        if any(agree(s, t) for t in trace):
            continue
        lines = set(ran.get(s["file"], ()))
        if any(n in lines for n in range(s["line"], s["end"] + 1)):
            static_only.append(s)
        else:
            not_run += 1
    return {"agree": len(both), "static_only": static_only, "trace_only": trace_only, "not_run": not_run}


def report(results: list[dict]) -> None:
    print(f"{'case':40} {'agree':>5} {'static only':>11} {'trace only':>10} {'static, not run':>15}")
    details = []
    for r in results:
        if "error" in r:
            print(f"{r['case']:40} ERROR {r['error'][:120]}")
            continue
        c = compare(r)
        print(f"{r['case']:40} {c['agree']:5} {len(c['static_only']):11} {len(c['trace_only']):10} {c['not_run']:15}")
        for side, items in (("static only", c["static_only"]), ("trace only", c["trace_only"])):
            for f in items:
                details.append(f"  {r['case']}: {side}: {f['code']} ({f['severity']}) {_short(f['file'])}:{f['line']} "
                               f"{f['message'][:150]}")
    print("\ndisagreements (static only: the statement ran, the trace did not report it; trace only: the static "
          "check did not report it):")
    print("\n".join(details) or "  none")


def _short(path: str) -> str:
    marker = "site-packages" + os.sep
    return path.split(marker, 1)[1] if marker in path else os.path.relpath(path, HERE)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", nargs="*")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--timeout", type=int, default=600)
    parser.add_argument("--json", help="save the results here")
    parser.add_argument("--from-json", help="print saved results")
    parser.add_argument("--cover", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cover:
        import contextlib

        with contextlib.redirect_stdout(sys.stderr):
            covered = cover(json.loads(args.cover))
        print(json.dumps(covered))
        return 0
    if args.from_json:
        report(json.loads(Path(args.from_json).read_text()))
        return 0
    wanted = set(args.cases)
    results = []
    for case in cases():
        if wanted and case.name not in wanted:
            continue
        print(f"checking {case.name}", file=sys.stderr)
        try:
            results.append(check_case(case, args.python, args.timeout))
        except subprocess.TimeoutExpired:
            results.append({"case": case.name, "error": f"timed out after {args.timeout} s"})
    if args.json:
        Path(args.json).write_text(json.dumps(results))
    report(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
