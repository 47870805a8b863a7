"""A matrix of per-rank values reaching a decision about a submodule call through a binding path (ZG2 provenance).

    python bench/zg2_prov_matrix.py                 # the tables, then the failing cells
    python bench/zg2_prov_matrix.py --keep /tmp/m   # also keep the generated files there
    python bench/zg2_prov_matrix.py --zgen "python -m zgen"   # another checker command

Each generated file is one small model library: a `Block` layer, a `Net` holding two of them, and one method
`run(self, h, tracker, state)` where a value flows from a **source** through a **binding path** into a decision, the
**operation**, about running a block. The cells are the product of the three axes:

* **source**, what differs between ranks: the rank (`dist.get_rank() == 0`), a random draw (`torch.rand(()) < 0.5`),
  this rank's data (`(h > 0).any()`), what a submodule returned (`o = self.sub(h)` ... `o.argmax(-1)[0] == 0`; tested
  at once, `self.sub(h).max() > 0.5`), what an object handed a submodule's output returns
  (`state.step(self.sub(h).argmax(-1))`, an environment's `done`);
* **path**, how the value reaches the test: a local, tuple unpacking, a list filled by `append`, a dict literal, a
  free function returning its argument, a method returning its argument, an object handed it by a method
  (`tracker.update(v)` ... `tracker.value`), an object's attribute written (`state.flag = v`), an attribute of
  `self` written in the same method, one written in another method the first calls (`self.observe(h)`), a `for`
  target over `zip`, a comprehension;
* **operation**, what the test decides: a gate (`if t: self.alt(h)`), a pick (`self.alt(h) if t else
  self.sub(h)`), an early `return` before a call, a `while` loop, a `break` out of a loop that runs a block, a
  loop count (`range(int(t))`), a module chosen into a local (`block = self.alt if t else self.sub; block(h)`), a
  gate on a `functools.partial` of the block, a `break` out of a loop that runs it through a lambda.

Every hazard cell has two safe twins with the same path and operation: **agreed** (the value all-reduced before it
is bound: `dist.all_reduce(v)`, the same on every rank) and **config** (a constructor setting, `self.use_extra`).
A hazard file is *found* when a ZG2xx finding's rows overlap the test's line ±1 or the call's line (markers
`# COND` / `# CALL`); a safe file is *clean* when no ZG2xx finding is reported in it.

`zgen check` runs as users run it: the installed CLI over all files in one process per 400 files.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from zg2_matrix import expected_lines, print_summary, run_zgen  # noqa: E402  (the same markers and the same run as the ZG2 matrix)


@dataclass(frozen=True)
class Source:
    name: str
    setup: tuple[str, ...]  # lines before the value (in the method that makes it)
    expr: str  # the per-rank value


SOURCES = [
    Source("rank", (), "dist.get_rank() == 0"),
    Source("random", (), "torch.rand(()) < 0.5"),
    Source("data", (), "(h > 0).any()"),
    Source("output", ("o = self.sub(h)",), "o.argmax(-1)[0] == 0"),
    Source("output tested at once", (), "self.sub(h).max() > 0.5"),
    Source("object handed an output", (), "state.step(self.sub(h).argmax(-1))"),
    # h-zg2flow: the rank answered by a method of the class and by a function of the file, under names of no rank
    Source("rank method", (), "self.first_of_group()"),
    Source("rank function of the file", (), "on_first_host()"),
]


@dataclass(frozen=True)
class Path_:
    name: str
    bind: tuple[str, ...]  # lines binding `{v}` (the value) so that `test` reads it
    test: str
    other_method: bool = False  # the source and the binding live in `observe`, which `run` calls


PATHS = [
    Path_("local", ("x = {v}",), "x"),
    Path_("tuple unpacking", ("x, _n = {v}, 0",), "x"),
    Path_("list append", ("xs = []", "xs.append({v})"), "xs[-1]"),
    Path_("dict literal", ('d = {{"v": {v}}}',), 'd["v"]'),
    Path_("function return", ("x = ident({v})",), "x"),
    Path_("method return", ("x = self.keep({v})",), "x"),
    Path_("object method", ("tracker.update({v})",), "tracker.value"),
    Path_("object attribute", ("state.flag = {v}",), "state.flag"),
    Path_("self attribute", ("self.v = {v}",), "self.v"),
    Path_("self attribute, other method", ("self.v = {v}",), "self.v", other_method=True),
    Path_("zip target", ("for x, _y in zip([{v}], [0]):", "    pass"), "x"),
    Path_("comprehension", ("xs = [a for a in ({v},)]",), "xs[0]"),
]

# An operation: lines with `{t}` (the test) and `{pre}` (the source and binding lines, at the operation's own indent).
OPERATIONS = {
    "gate": "{pre}\nif {t}:  # COND\n    h = self.alt(h)  # CALL",
    "pick": "{pre}\nh = self.alt(h) if {t} else self.sub(h)  # COND CALL",
    "early return": "{pre}\nif {t}:  # COND\n    return h\nh = self.alt(h)  # CALL",
    "while": "{pre}\nwhile {t}:  # COND\n    h = self.alt(h)  # CALL",
    "break": "for _ in range(8):\n    h = self.alt(h)  # CALL\n{pre:4}\n    if {t}:  # COND\n        break",
    "loop count": "{pre}\nfor _ in range(int({t})):  # COND\n    h = self.alt(h)  # CALL",
    "chosen module": "{pre}\nblock = self.alt if {t} else self.sub  # COND\nh = block(h)  # CALL",
    "gate, partial": "{pre}\nf = functools.partial(self.alt)\nif {t}:  # COND\n    h = f(h)  # CALL",
    "break, lambda": "f = lambda a: self.alt(a)\nfor _ in range(8):\n    h = f(h)  # CALL\n{pre:4}\n    if {t}:  # COND\n        break",
}

SAFE_KINDS = ("agreed", "config")

HEAD = '''\
import functools
import os

import torch
import torch.distributed as dist
import torch.nn as nn


def ident(a):
    return a


def on_first_host():
    return int(os.environ.get("RANK", "0")) == 0


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4096, 4096)

    def forward(self, x):
        return self.fc(x)


class Net(nn.Module):
    def __init__(self, use_extra=False):
        super().__init__()
        self.sub = Block()
        self.alt = Block()
        self.use_extra = use_extra
        self.v = None

    def keep(self, a):
        return a

    def first_of_group(self):
        return dist.get_rank() % 8 == 0

    def forward(self, h):
        return self.sub(h)
'''


def _value_lines(source: Source, safe: str | None) -> tuple[list[str], str]:
    """The lines making the value, and the expression that holds it."""
    if safe == "config":
        return [], "self.use_extra"
    lines = [*source.setup, f"v0 = {source.expr}"]
    if safe == "agreed":
        lines.append("dist.all_reduce(v0)")
    return lines, "v0"


def generate(source: Source, path: Path_, operation: str, safe: str | None) -> str:
    made, value = _value_lines(source, safe)
    bind = [line.format(v=value) for line in path.bind]
    text = HEAD
    if path.other_method:
        body = "\n".join([*made, *bind])
        text += "\n    def observe(self, h):\n" + textwrap.indent(body or "pass", " " * 8) + "\n"
        pre = ["self.observe(h)"]
    else:
        pre = [*made, *bind]
    template = OPERATIONS[operation]
    pre_text = "\n".join(pre)
    if "{pre:4}" in template:
        block = template.replace("{pre:4}", textwrap.indent(pre_text, "    ")).replace("{t}", path.test)
    else:
        block = template.replace("{pre}", pre_text).replace("{t}", path.test)
    text += "\n    def run(self, h, tracker, state):\n" + textwrap.indent(block, " " * 8) + "\n        return h\n"
    return text


@dataclass(frozen=True)
class Case:
    safe: str | None  # None: a hazard
    source: str
    path: str
    operation: str
    file: Path


def build(root: Path) -> list[Case]:
    cases: list[Case] = []
    for safe in (None, *SAFE_KINDS):
        for source in SOURCES:
            for path in PATHS:
                for operation in OPERATIONS:
                    file = root / f"p{len(cases):05d}.py"
                    file.write_text(generate(source, path, operation, safe))
                    cases.append(Case(safe, source.name, path.name, operation, file))
    return cases


def _hit(case: Case, findings: list[dict], rows: set[int]) -> bool:
    for f in findings:
        if not f["code"].startswith("ZG2"):
            continue
        if case.safe is not None:
            return True
        start, end = f["location"]["row"], f["end_location"]["row"]
        if any(start <= r <= end for r in rows):
            return True
    return False


def _table(title: str, rows: list[str], cols: list[str], cell: dict) -> str:
    out = [title, "", "| " + " | ".join(["", *cols, "all"]) + " |", "|" + "---|" * (len(cols) + 2)]
    for r in rows:
        cells = [f"{cell[r, c][0]}/{cell[r, c][1]}" if (r, c) in cell else "-" for c in cols]
        ok = sum(cell[r, c][0] for c in cols if (r, c) in cell)
        n = sum(cell[r, c][1] for c in cols if (r, c) in cell)
        out.append(f"| {r} | " + " | ".join(cells) + f" | {ok}/{n} |")
    totals = []
    for c in cols:
        ok = sum(cell[r, c][0] for r in rows if (r, c) in cell)
        n = sum(cell[r, c][1] for r in rows if (r, c) in cell)
        totals.append(f"{ok}/{n}")
    ok = sum(v[0] for v in cell.values())
    n = sum(v[1] for v in cell.values())
    out.append("| **all** | " + " | ".join(totals) + f" | {ok}/{n} = {ok / max(n, 1):.2f} |")
    return "\n".join(out)


def report(cases: list[Case], results: dict[Case, bool], hazard: bool) -> str:
    chosen = [c for c in cases if (c.safe is None) is hazard]
    what = "recall" if hazard else "clean"
    parts = []
    ops = list(OPERATIONS)
    for title, row_of, rows in (
        ("path", lambda c: c.path, [p.name for p in PATHS]),
        ("source", lambda c: c.source, [s.name for s in SOURCES]),
    ):
        cell: dict = {}
        for c in chosen:
            good = results[c] if hazard else not results[c]
            ok, n = cell.get((row_of(c), c.operation), (0, 0))
            cell[row_of(c), c.operation] = (ok + good, n + 1)
        parts.append(_table(f"**{what} by {title} x operation**", rows, ops, cell))
    return "\n\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zgen", default=f"{sys.executable} -m zgen", help="the checker command (default: this python)")
    parser.add_argument("--keep", type=Path, help="write the generated files here and keep them")
    parser.add_argument("--failures", type=int, default=60, help="how many failing cells to list")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        cases = build(root)
        found = run_zgen(shlex.split(args.zgen), [c.file for c in cases], root)
        results = {c: _hit(c, found.get(c.file.resolve(), []), expected_lines(c.file.read_text())) for c in cases}
    print(report(cases, results, True))
    print()
    print(report(cases, results, False))
    print_summary([c for c in cases if c.safe is None], [c for c in cases if c.safe is not None], results,
                  args.failures,
                  lambda c: (f"{c.safe}: " if c.safe is not None else "") + f"{c.source} | {c.path} | {c.operation}  ({c.file.name})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
