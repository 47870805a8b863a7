"""Run every trace-corpus case with plain PyTorch (no zgen) and check what its labels claim can happen.

For each case: build the model, make a micro batch, run forward + backward and the entry, as two simulated
ranks (different seeds, different data, `torch.distributed.get_rank()` answering 0 or 1), several times.
It checks that

* every labelled hazard line of the case was executed (line tracing of the labelled files);
* a case with a ZG2 hazard called different sequences of parameter-owning modules on the two ranks at least
  once, and a clean case never did (except where the labelled fix needs a real process group, see SYNC_WORLD).

Usage: python check_cases.py [CASE_NAME ...] [--pairs N] [--set NAME]. Needs ZGEN_NANOGPT for the nanoGPT cases.
`--set blind2` checks the set in blind2/ (its cases/ and manifest.tsv) instead of this directory's.
Exit status 1 when a check fails.
"""
from __future__ import annotations

import argparse
import csv
import importlib.util
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist

HERE = Path(__file__).resolve().parent
# clean cases whose divergence guard is a collective: with independent simulated ranks (a world of one) their
# call sequences may differ, so only their execution is checked here
SYNC_WORLD = {"transformers_llama_generate_synced", "transformers_marian_beam_synced"}
# what `torch.distributed.get_world_size()` answers inside a case (the evaluation's --world-size)
WORLD_SIZE = 2


def set_root(name):
    """The directory of a case set: this one (the first set) or a named set beside its cases/ (e.g. blind2)."""
    root = HERE / name if name else HERE
    if not (root / "manifest.tsv").is_file() or not (root / "cases").is_dir():
        raise SystemExit(f"{root}: not a case set (needs manifest.tsv and cases/)")
    return root


def load_manifest(root):
    with open(root / "manifest.tsv", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    cases = {}
    for row in rows:
        cases.setdefault(row["case"], []).append(row)
    return cases


def load_case(root, name):
    spec = importlib.util.spec_from_file_location(f"case_{name}", root / "cases" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class LineTracer:
    """Records executed (file suffix, line) pairs for the labelled files only."""

    def __init__(self, targets):
        self.targets = targets  # file suffix -> set of lines
        self.hit = set()
        self._cache = {}

    def _suffix(self, filename):
        if filename not in self._cache:
            self._cache[filename] = next((s for s in self.targets if filename.endswith(s)), None)
        return self._cache[filename]

    def global_trace(self, frame, event, arg):
        suffix = self._suffix(frame.f_code.co_filename)
        if suffix is None:
            return None

        def local(frame, event, arg):
            if event == "line" and frame.f_lineno in self.targets[suffix]:
                self.hit.add((suffix, frame.f_lineno))
            return local

        return local(frame, event, arg) and local


def run_rank(case, rank, pair, calls):
    seed = 1000 * pair + rank
    torch.manual_seed(0)
    random.seed(0)
    np.random.seed(0)
    model = case.build_model()
    model.train()
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed % (2**32))
    batch = case.inputs(2, 16, torch.Generator().manual_seed(seed))
    dist.get_rank = lambda group=None: rank
    dist.get_world_size = lambda group=None: WORLD_SIZE

    # a module is named by its path in the built model (the same on both simulated ranks), so two different
    # modules of one class (two experts, two task heads) count as different calls; modules made later (in an
    # entry) are named by their class
    names = {id(m): name or "<root>" for name, m in model.named_modules()}

    def hook(module, args):
        if any(True for _ in module.parameters(recurse=False)):
            calls.append(names.get(id(module), type(module).__name__))

    handle = torch.nn.modules.module.register_module_forward_pre_hook(hook)
    try:
        out = model(**batch) if isinstance(batch, dict) else model(*batch)
        loss = out if torch.is_tensor(out) else out.loss
        loss.backward()
        if hasattr(case, "entry"):
            case.entry(model, batch)
    finally:
        handle.remove()
    return calls


def check(root, name, rows, pairs):
    case = load_case(root, name)
    hazards = [r for r in rows if r["label"] == "hazard"]
    targets = {}
    for r in hazards:
        suffix = r["file"][len("cases/"):] if r["file"].startswith("cases/") else r["file"]
        targets.setdefault(suffix, set()).add(int(r["line"]))
    tracer = LineTracer(targets)
    diverged = 0
    start = time.perf_counter()
    sys.settrace(tracer.global_trace)
    try:
        for pair in range(pairs):
            seqs = [run_rank(case, rank, pair, []) for rank in (0, 1)]
            diverged += seqs[0] != seqs[1]
    finally:
        sys.settrace(None)
    seconds = time.perf_counter() - start
    problems = []
    for suffix, lines in targets.items():
        for line in sorted(lines):
            if (suffix, line) not in tracer.hit:
                problems.append(f"labelled line {suffix}:{line} never ran")
    families = {r["family"] for r in hazards}
    if "ZG2" in families and not diverged:
        problems.append(f"ZG2 hazard but the ranks called the same modules in all {pairs} pairs")
    if not hazards and diverged and name not in SYNC_WORLD:
        problems.append(f"clean case but the ranks' module calls differed in {diverged}/{pairs} pairs")
    return problems, diverged, seconds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*")
    parser.add_argument("--pairs", type=int, default=4, help="simulated rank pairs per case (default 4)")
    parser.add_argument("--set", dest="case_set", metavar="NAME", help="check the case set in NAME/ (e.g. blind2)")
    args = parser.parse_args(argv)
    root = set_root(args.case_set)
    manifest = load_manifest(root)
    names = args.cases or sorted(manifest)
    if not dist.is_initialized():
        store = tempfile.mktemp(prefix="trace_corpus_store")
        dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=1)
    failed = 0
    total = time.perf_counter()
    for name in names:
        try:
            problems, diverged, seconds = check(root, name, manifest[name], args.pairs)
        except Exception as error:  # report and go on
            problems, diverged, seconds = [f"raised {type(error).__name__}: {error}"], 0, 0.0
        status = "ok" if not problems else "FAIL"
        failed += bool(problems)
        kind = "hazard" if any(r["label"] == "hazard" for r in manifest[name]) else "clean"
        print(f"{status:4} {name:40} {kind:6} diverged {diverged}/{args.pairs}  {seconds:5.1f}s")
        for problem in problems:
            print(f"     - {problem}")
    print(f"{len(names) - failed}/{len(names)} cases ok, {time.perf_counter() - total:.0f}s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
