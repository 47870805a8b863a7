"""A matrix of ZG303 hazards by instance provenance: how a value became an instance of a module class x how a call
reaches it x what the called method does to the class's own parameters; prints figures.

    python bench/zg3_prov_matrix.py                  # the whole product, summary by axis
    python bench/zg3_prov_matrix.py --failures 40    # and the first 40 failing cells
    python bench/zg3_prov_matrix.py --keep /tmp/pm   # keep the generated files

Each cell is one small package (the checked `model.py`, and `lib.py` beside it for the source of another file),
the product of three axes:

* **source**: how `self.v` of the holder comes to be an instance of `Core` (a module class deriving from
  `Base`, whose methods raise `NotImplementedError`): built in `__init__`, returned by a factory function of
  the file, the first of a tuple a factory returns unpacked into locals, the same from a factory of another file
  of the package (the local re-bound by `core.float()`), annotated with the base class on the attribute
  (`self.v: Base = builder(d)`), an `__init__` argument annotated with the base (`v: Base`), or a class-body
  annotation (`v: Base`) of an attribute set from a registry lookup;
* **path**: how a call reaches it: `self.v.m(x)` in `forward`, a local bound to `self.v`, a helper method
  `forward` calls, a `@property` returning `self.v`, a method the training loop runs on the built model
  (`generate`), a holder that is no module (a sampler's `step`), a local bound by a conditional expression,
  a local bound by tuple unpacking (`v, n = self.v, 2`), a loop variable over a `ModuleList`/`ModuleDict` built
  from `self.v` (`for v in self.vs`, `.items()`, `.values()`), an element of one by index or key (`self.vs[0]`,
  `v = self.vd["a"]`), a method's parameter the class's own call binds to `self.v` (`self._run(self.v, x)`),
  a function of the file the forward hands `self.v` to (`run(self.v, x)`), and the joins (h-zg3call): a getter
  method's value (`self.get_v().m(x)`), a function handing back its argument (`unwrap(self.v).m(x)`), the
  method named by a string constant (`getattr(self.v, M)(x)`) or handed to a call helper (`call_m(self.v, "m", x)`);
* **operation**: what `Core.m` does: reads its own large parameter, reads it through its own helper or its own
  property, sizes it, reads a child's weight with a functional op, runs its own forward by name (which reads
  the parameter), reads it through a helper of the base class, hands `self` to a function that reads every
  parameter, loads its own state dict, or, in a `Core` with no forward at all, reads a small parameter (no hook
  ever gathers it);
  or, spelt at the call, the holder calls `.forward` by name or hands it on as a callback (ZG302), reads
  `Core`'s own large parameter or its child's weight (ZG301).

Small parameters: ZeRO-3 keeps one gathered only once something fetched it (a forward, an optimizer step), and
inside the engine's forward a read fetches it; outside any forward nothing does. So `m` reading a small
parameter (`small_outside`) is a hazard on the paths outside forward (`entry`, `plain_holder`) and a safe
look-alike on the others (`small_gathered`); a plain holder calling `m` inside `GatheredParameters`
(`plain_gathered`) is safe for every operation.

Safe look-alikes per source x path: `m` only runs a child as a module (`self.norm(h)`), reads a small
parameter in forward context (the class has a forward), only the dtype of one, a buffer (also through a helper
handed `self`), a plain value, or only the keys of its own state dict; and,
spelt at the call, `self.v` called as a module, its small parameter read where it also runs as a module, its large
parameter's dtype, a buffer and a plain attribute of it. A hazard cell is found when a ZG3 finding spans the line
marked `# KEY`; a safe cell is clean
when no ZG3 finding is reported in the file.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from zg2_matrix import print_summary, run_zgen  # noqa: E402  (bench scripts are run as files, not a package)

HEAD = """import torch
import torch.nn.functional as F
from torch import nn


class Base(nn.Module):
    def m(self, h):
        raise NotImplementedError

    def base_project(self, h):
        return h @ self.table.T


def solve(fn, x):
    return fn(x)


def unwrap(m):
    return m.module if hasattr(m, "module") else m


def call_m(obj, name, *args):
    return getattr(obj, name)(*args)


def table_norm(mod):
    return sum(p.data.norm() for p in mod.parameters())


def buffer_norm(mod):
    return sum(b.norm() for b in mod.buffers())

"""

# operation -> (Core's body: its __init__, forward and `m`)
CORE_INIT = """
class Core(Base):
    def __init__(self, d):
        super().__init__()
        self.table = nn.Parameter(torch.empty(4096, d))
        self.norm = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4096)
        self.gain = nn.Parameter(torch.ones(d))
        self.register_buffer("steps", torch.zeros(d))
        self.width = d
"""
FORWARD = """
    def forward(self, x):
        return self.fc(x) + self.table.sum()
"""
OPERATIONS = {
    "read_own": FORWARD + """
    def m(self, h):
        return h @ self.table.T
""",
    "own_helper": FORWARD + """
    def _project(self, h):
        return h @ self.table.T

    def m(self, h):
        return self._project(h)
""",
    "own_property": FORWARD + """
    @property
    def codes(self):
        return self.table.T

    def m(self, h):
        return h @ self.codes
""",
    "size": FORWARD + """
    def m(self, h):
        return h[..., : self.table.shape[0]]
""",
    "child_weight": FORWARD + """
    def m(self, h):
        return F.linear(h, self.fc.weight)
""",
    "forward_by_name": FORWARD + """
    def m(self, h):
        return self.forward(h) * 2
""",
    # joins (h-zg3call): a base-class helper reads the parameter; `self` handed to a helper function that reads every
    # parameter; the module's own state dict loaded
    "base_helper": FORWARD + """
    def m(self, h):
        return self.base_project(h)
""",
    "handed_helper": FORWARD + """
    def m(self, h):
        return h * table_norm(self)
""",
    "own_state": FORWARD + """
    def m(self, h):
        self.load_state_dict(h)
        return h
""",
    "no_forward_small": """
    def m(self, h):
        return h * self.scale.exp()
""",
}
# operations spelt at the call instead of in `Core.m` (Core's body is `read_own`'s): the holder bypasses Core's
# hooks itself, calling its forward by name (ZG302), handing it on as a callback (ZG302), or reading a parameter of
# the instance or of its child (ZG301)
CALLS = {
    "forward_call": "{r}.forward(x)",
    "forward_handed": "solve({r}.forward, x)",
    "param_read": "x @ {r}.table.T",
    "child_param_read": "F.linear(x, {r}.fc.weight)",
}
SAFE_CALLS = {
    "called_as_module": "{r}(x)",
    "small_param_read": "{r}(x) * {r}.gain",  # the instance runs as a module: its small parameter stays gathered
    "param_dtype": "x.to({r}.table.dtype)",
    "buffer_attr_read": "x * {r}.steps",
    "value_attr_read": "x[..., : {r}.width]",
}
SAFE_OPERATIONS = {
    "runs_child": FORWARD + """
    def m(self, h):
        return self.norm(h)
""",
    "small_gathered": FORWARD + """
    def m(self, h):
        return h * self.gain
""",
    "small_dtype": FORWARD + """
    def m(self, h):
        return h.to(self.gain.dtype) * 2
""",
    "buffer_read": FORWARD + """
    def m(self, h):
        return h * self.steps
""",
    "plain_value": FORWARD + """
    def m(self, h):
        return h[..., : self.width]
""",
    "handed_buffers": FORWARD + """
    def m(self, h):
        return h * buffer_norm(self)
""",
    "own_state_keys": FORWARD + """
    def m(self, h):
        return h[..., : len(self.state_dict().keys())]
""",
}

PACKAGE = "<package>"  # the `before` of a source whose classes live in `lib.py` of the cell's package
PACKAGE_BASE = "<package base>"  # the same, with the holder's base class in `lib.py` too
LIBRARY_FACTORY = "\n\ndef make_pair(d):\n    return Core(d), 2 * d\n"
IMPORTS = "from torch import nn\n\nfrom .lib import call_m, make_pair, solve, unwrap\n\n\n"

# source -> (code before the holder, the holder's __init__ signature tail, its body binding self.v, class body)
SOURCES = {
    "built": ("", "", "self.v = Core(d)", ""),
    "factory": ("def make_core(d):\n    core = Core(d)\n    return core\n\n\n", "", "self.v = make_core(d)", ""),
    "tuple_factory": (
        "def make_pair(d):\n    return Core(d), 2 * d\n\n\n", "", "core, width = make_pair(d)\n        self.v = core", ""
    ),
    "annotated": ("", ", builder", "self.v: Base = builder(d)", ""),
    "typed_argument": ("", ", v: Base", "self.v = v", ""),
    "class_annotation": ("", ", registry, kind", "self.v = registry[kind](d)", "    v: Base\n\n"),
    # `Core` and the factory in another file of the package; the local re-bound by a call returning the module
    "package_factory": (PACKAGE, "", "core, width = make_pair(d)\n        core = core.float()\n        self.v = core", ""),
    # class-valued names (h-duck): the class the holder builds is a value held by the class, an argument or a
    # registry; the instance is any class the family assigns
    "class_attribute": ("", "", "self.v = self.core_class(d)", "    core_class = Core\n\n"),
    "class_argument": ("", ", core_cls=Core", "self.v = core_cls(d)", ""),
    "getattr_class": ("", "", 'cls = getattr(self, "core_class", Core)\n        self.v = cls(d).to("cpu")', ""),
    "class_registry": ('NETS = {"core": Core}\n\n\n', ", kind", "self.v = NETS[kind](d)", ""),
    "subclass_attribute": ("", "", "self.v = self.core_class(d)", ""),
    "self_class_attribute": ("", "", "self.core_class = Core\n        self.v = self.core_class(d)", ""),
    # a base of another file builds `self.v` from `getattr(self, "core_class", None)`; the checked subclass sets it
    "inherited_class": (PACKAGE_BASE, "", 'self.core_class = getattr(self, "core_class", Core)\n        super().__init__(d)', ""),
    # look-alikes: the class value is a plain class (no module) with the same methods
    "plain_class_attribute": ("", "", "self.v = self.core_class(d)", "    core_class = PlainCore\n\n"),
}
# text after the holder class, per source: a subclass of the file setting the class attribute
AFTER = {"subclass_attribute": "\n\nclass CoreHolder(Holder):\n    core_class = Core\n"}
SAFE_SOURCES = frozenset({"plain_class_attribute"})  # every cell of these is a look-alike
PLAIN_CORE = """

class PlainCore:
    def __init__(self, d):
        self.table = torch.empty(4096, d)
        self.width = d

    def m(self, h):
        return h @ self.table.T

    def _project(self, h):
        return h @ self.table.T
"""

# path -> (methods of the holder; `CALL` is where the call goes, on the line marked `# KEY`)
PATHS = {
    "forward": "    def forward(self, x):\n        return CALL  # KEY\n",
    "local": "    def forward(self, x):\n        v = self.v\n        return CALL  # KEY\n",
    "helper": "    def forward(self, x):\n        return self._step(x)\n\n    def _step(self, x):\n        return CALL  # KEY\n",
    "property": (
        "    @property\n    def core(self):\n        return self.v\n\n"
        "    def forward(self, x):\n        return CALL  # KEY\n"
    ),
    "entry": "    def forward(self, x):\n        return x\n\n    def generate(self, x):\n        return CALL  # KEY\n",
    "plain_holder": "    def step(self, x):\n        return CALL  # KEY\n",
    "plain_gathered": (
        "    def step(self, x):\n        with deepspeed.zero.GatheredParameters(list(self.v.parameters())):\n"
        "            return CALL  # KEY\n"
    ),
    "conditional": "    def forward(self, x, slow=False):\n        v = self.v if slow else self.v\n        return CALL  # KEY\n",
    "unpacked": "    def forward(self, x):\n        v, n = self.v, 2\n        return CALL  # KEY\n",
    # a loop variable over a container of modules built from the instance (issue 20: a weight read through a
    # `ModuleDict`/`ModuleList` loop variable), over the module's children, and a method's argument the class's own
    # call binds to the instance
    "loop_list": "    def forward(self, x):\n        for v in self.vs:\n            x = CALL  # KEY\n        return x\n",
    "loop_dict": "    def forward(self, x):\n        for k, v in self.vd.items():\n            x = CALL  # KEY\n        return x\n",
    "loop_values": "    def forward(self, x):\n        for v in self.vd.values():\n            x = CALL  # KEY\n        return x\n",
    "argument": (
        "    def forward(self, x):\n        return self._run(self.v, x)\n\n"
        "    def _run(self, v, x):\n        return CALL  # KEY\n"
    ),
    # an element of such a container by index or key, and a function of the file the forward hands the instance to
    "indexed": "    def forward(self, x):\n        return CALL  # KEY\n",
    "keyed_local": '    def forward(self, x):\n        v = self.vd["a"]\n        return CALL  # KEY\n',
    "free_function": "    def forward(self, x):\n        return run(self.v, x)\n\n\ndef run(v, x):\n    return CALL  # KEY\n",
    # bound methods as values (h-duck): a local bound to the method, the method looked up by name, a method kept in
    # a tuple, a bound method handed to a function that calls it; only with the operations `m` spells
    "bound_local": "    def step(self, x):\n        f = self.v.m\n        return CALL  # KEY\n",
    "bound_getattr": "    def step(self, x):\n        return CALL  # KEY\n",
    "bound_tuple": "    def step(self, x):\n        fns = (self.v.m, self.v.m)\n        return CALL  # KEY\n",
    "bound_handed": "    def step(self, x):\n        return CALL  # KEY\n",
    # receivers through joins (h-zg3call): a getter method returning the held instance, a function handing back its
    # argument (or the module it wraps), the method named by a string constant of the file or handed to a call helper
    "getter": "    def get_v(self):\n        return self.v\n\n    def forward(self, x):\n        return CALL  # KEY\n",
    "unwrapped": "    def forward(self, x):\n        return CALL  # KEY\n",
    "constant_getattr": '    def step(self, x):\n        return CALL  # KEY\n\n\nM = "m"\n',
    "call_helper": "    def step(self, x):\n        return CALL  # KEY\n",
}
BOUND_CALLS = {
    "bound_local": "f(x)", "bound_getattr": 'getattr({r}, "m")(x)', "bound_tuple": "fns[0](x)", "bound_handed": "solve({r}.m, x)",
    "constant_getattr": "getattr({r}, M)(x)", "call_helper": 'call_m({r}, "m", x)',
}
RECEIVERS = {
    "local": "v", "property": "self.core", "conditional": "v", "unpacked": "v", "loop_list": "v", "loop_dict": "v",
    "loop_values": "v", "argument": "v", "indexed": "self.vs[0]", "keyed_local": "v", "free_function": "v",
    "getter": "self.get_v()", "unwrapped": "unwrap(self.v)",
}
# path -> what the holder's __init__ adds after binding `self.v`
PATH_INIT = {
    "loop_list": "self.vs = nn.ModuleList([self.v])",
    "loop_dict": 'self.vd = nn.ModuleDict({"a": self.v})',
    "loop_values": 'self.vd = nn.ModuleDict({"a": self.v})',
    "indexed": "self.vs = nn.ModuleList([self.v])",
    "keyed_local": 'self.vd = nn.ModuleDict({"a": self.v})',
}
JOINED = frozenset({"getter", "unwrapped"})  # receivers typed through a returned value: `m`'s operations only
OUTSIDE_FORWARD = frozenset({"entry", "plain_holder", "plain_gathered", *BOUND_CALLS})  # paths that run outside any forward
GATHERED = frozenset({"plain_gathered"})  # paths that call `m` inside a gather: every operation is safe there


@dataclass(frozen=True)
class Cell:
    source: str
    path: str
    operation: str
    hazard: bool
    file: Path


def render(source: str, path: str, operation: str, body: str) -> dict[str, str]:
    """The cell's files: `model.py` (checked), and `lib.py` beside it for a source of another file."""
    before, signature, binding, class_body = SOURCES[source]
    core = CORE_INIT
    if source in SAFE_SOURCES:
        body = SAFE_OPERATIONS["runs_child"]  # the holder builds the plain class: `Core` only stands beside it
    if operation == "no_forward_small":
        core = core.replace("        self.fc = nn.Linear(d, 4096)\n", "        self.scale = nn.Parameter(torch.zeros(d))\n")
    receiver = RECEIVERS.get(path, "self.v")
    call = {**CALLS, **SAFE_CALLS}.get(operation, "{r}.m(x)").format(r=receiver)
    call = BOUND_CALLS.get(path, call).format(r=receiver)
    module = path not in ("plain_holder", "plain_gathered", *BOUND_CALLS)
    header = "class Holder(nn.Module):\n" if module else "class Holder:\n"
    init = f"    def __init__(self, d{signature}):\n" + ("        super().__init__()\n" if module and before != PACKAGE_BASE else "")
    init += f"        {binding}\n"
    if path in PATH_INIT:
        init += f"        {PATH_INIT[path]}\n"
    init += "\n"
    methods = PATHS[path].replace("CALL", call)
    after = AFTER.get(source, "")
    if before == PACKAGE:
        return {"lib.py": HEAD + core + body + LIBRARY_FACTORY, "model.py": IMPORTS + header + class_body + init + methods}
    if before == PACKAGE_BASE:
        base = "class HolderBase(nn.Module):\n" if module else "class HolderBase:\n"
        base += "    def __init__(self, d):\n" + ("        super().__init__()\n" if module else "")
        base += '        cls = getattr(self, "core_class", None)\n        self.v = cls(d)\n'
        header = header.replace("nn.Module", "HolderBase") if module else "class Holder(HolderBase):\n"
        imports = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\nfrom .lib import Core, HolderBase, call_m, solve, unwrap\n\n\n"
        return {"lib.py": HEAD + core + body + "\n\n" + base, "model.py": imports + header + class_body + init + methods}
    return {"model.py": HEAD + core + body + PLAIN_CORE + "\n\n" + before + header + class_body + init + methods + after}


def build(root: Path) -> list[Cell]:
    cells = []
    for source in SOURCES:
        for path in PATHS:
            if source in SAFE_SOURCES and path in PATH_INIT:
                continue  # a container of modules cannot hold a plain object: no look-alike there
            hazards = {**OPERATIONS, **dict.fromkeys(CALLS, OPERATIONS["read_own"])}
            safe = {**SAFE_OPERATIONS, **dict.fromkeys(SAFE_CALLS, OPERATIONS["read_own"])}
            if path in BOUND_CALLS or path in JOINED:  # a bound method, a joined receiver: only what `m` does
                hazards = {k: v for k, v in hazards.items() if k not in CALLS}
                safe = {k: v for k, v in safe.items() if k not in SAFE_CALLS}
            if path in OUTSIDE_FORWARD:  # a small parameter read outside forward sees the placeholder
                hazards["small_outside"] = safe.pop("small_gathered")
            if path in GATHERED or source in SAFE_SOURCES:
                safe, hazards = {**hazards, **safe}, {}
            for operation, body in hazards.items():
                cells.append(_write(Cell(source, path, operation, True, root / f"h_{source}_{path}_{operation}" / "model.py"), body))
            for operation, body in safe.items():
                cells.append(_write(Cell(source, path, operation, False, root / f"s_{source}_{path}_{operation}" / "model.py"), body))
    return cells


def _write(cell: Cell, body: str) -> Cell:
    """Each cell is a package of its own (so a file beside the checked one is found as the import system would)."""
    cell.file.parent.mkdir(parents=True, exist_ok=True)
    (cell.file.parent / "__init__.py").write_text("")
    for name, text in render(cell.source, cell.path, cell.operation, body).items():
        (cell.file.parent / name).write_text(text)
    return cell


def _key_line(text: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.endswith("# KEY"))


def found(cell: Cell, findings: list[dict]) -> bool:
    zg3 = [f for f in findings if f["code"].startswith("ZG3")]
    if not cell.hazard:
        return bool(zg3)
    key = _key_line(cell.file.read_text())
    return any(f["location"]["row"] <= key <= f["end_location"]["row"] for f in zg3)


def _table(cells: list[Cell], results: dict[Cell, bool], rows: str, cols: str) -> str:
    row_names = list(dict.fromkeys(getattr(c, rows) for c in cells))
    col_names = list(dict.fromkeys(getattr(c, cols) for c in cells))
    out = ["| " + " | ".join([rows, *col_names, "all"]) + " |", "|" + "---|" * (len(col_names) + 2)]
    for r in row_names:
        line = []
        for c in col_names:
            chosen = [x for x in cells if getattr(x, rows) == r and getattr(x, cols) == c]
            line.append(f"{sum(results[x] for x in chosen)}/{len(chosen)}" if chosen else "-")
        chosen = [x for x in cells if getattr(x, rows) == r]
        out.append(f"| {r} | " + " | ".join(line) + f" | {sum(results[x] for x in chosen)}/{len(chosen)} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zgen", default=f"{sys.executable} -m zgen", help="the checker command (default: this python)")
    parser.add_argument("--keep", type=Path, help="write the generated files here and keep them")
    parser.add_argument("--failures", type=int, default=30, help="how many failing cells to list")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        cells = build(root)
        findings = run_zgen(shlex.split(args.zgen), [c.file for c in cells], root)
        results = {c: found(c, findings.get(c.file.resolve(), [])) for c in cells}
        hazards = [c for c in cells if c.hazard]
        safe = [c for c in cells if not c.hazard]
        clean = {c: not results[c] for c in safe}
        print("**hazard recall: source x path**\n")
        print(_table(hazards, results, "source", "path"))
        print("\n**hazard recall: operation x path**\n")
        print(_table(hazards, results, "operation", "path"))
        print("\n**safe clean: source x path**\n")
        print(_table(safe, clean, "source", "path"))
        print_summary(hazards, safe, results, args.failures,
                      lambda c: f"{c.source} | {c.path} | {c.operation}  ({c.file.parent.name})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
