"""A matrix of built-model provenance: source x binding path x operation, each with safe look-alikes.

    python bench/zg1_prov_matrix.py                     # summary by axis
    python bench/zg1_prov_matrix.py --show-fails 20     # and the first 20 failing cells
    python bench/zg1_prov_matrix.py --json out.json     # every cell's outcome

Each hazard cell is one small file: a built model reaches an operation on its
parameters (or on itself) from one **source**, through one **binding path**:

* sources: a function argument annotated as a module, a model reached through another
  object (`runner.model`), a model a class's `__init__` was handed and kept on `self` (a
  plain class, a module keeping it in a list, a property returning it), and the
  constructor's argument used in the constructor itself;
* paths: a `.parameters()` loop, `zip` of two `.named_parameters()`, a filtered list
  comprehension, a dict of named parameters walked by `.items()`, a generator function of
  the file yielding `(name, p)`, a helper function of the file handed the model, a list
  holding the model, tuple unpacking, a list filled by `.append` and walked by `enumerate`,
  an attribute path to a child's weight, `getattr(model, "module", model)`;
* container paths (h-qzg1): the parameters moved into a container made by a call handed the
  model or its parameters (`TensorDict.from_module(M)`, `make_functional(M)`, an imported
  `get_params(M)`, `OrderedDict(M.named_parameters())`, a dict comprehension, `list(...)`,
  a container of parts taken by `getattr` with computed names), reached by its items,
  subscripts, attributes, its `.apply(fn)` and a helper of the file handed it;
* operations: an in-place write of `.data`, a size (`numel()`), an initialiser, a read of
  `.data`, a `ones_like` sized from the parameter, a broadcast of `.data`, a lerp or copy
  toward its `.data`, a reduction (`.min()`, `.norm()`), a detached clone, `torch.save`, a read of its
  gradient's `.data` (h-zg1op); and on the model itself (for paths that bind it): `copy.deepcopy`,
  `torch.save(m.state_dict())`, and (h-zg1op) `load_state_dict`, the model pickled whole (`torch.save(m)`,
  `pickle.dumps(m)`, a pipe's `send(m)`) and `clip_grad_norm_` over its parameters;
* holder sources (h-zg1op): a plain object holding a built model (`self` of an agent, a local agent built
  around a model argument) deep-copied, saved, pickled or sent whole.

Each hazard cell has two look-alikes on the same path: the operation inside
`deepspeed.zero.GatheredParameters`, and the same code on a module built in the same
scope (never partitioned there by the code at hand; the existing ZG1 rules judge a module a
function builds and walks as built under `zero.Init`, so some of these are flagged on main as
well, and the figures show the two kinds of look-alike apart). A container path has a third
look-alike, the same call or container made of plain tensors (no model in it); an operation on the model has a
third look-alike too, the same operation on an optimizer built in the scope; a holder cell has one look-alike, the
same class holding a setting and no module. A hazard cell is found when `check_source` reports a
ZG1xx finding whose rows include the operation's line; a look-alike is clean when no
ZG1xx finding is reported at all.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

from zgen.model import check_source

HEAD = '''\
import copy
import pickle
from multiprocessing import Pipe

import deepspeed
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4096, 4096)

    def forward(self, x):
        return self.fc(x)


pipe, other_end = Pipe()


def iter_params(m):
    for n, p in m.named_parameters():
        yield n, p


'''

# source -> (code with a {BODY} slot indented as written, the expression of the built model there, body indent)
SOURCES: dict[str, tuple[str, str, int]] = {
    "argument": ("def step(model: nn.Module):\n    x = 1\n{BODY}\n", "model", 4),
    "other_object": ("def after_train_iter(runner):\n    x = 1\n{BODY}\n", "runner.model", 4),
    "ctor_kept_plain": (
        "class Averager:\n    def __init__(self, model):\n        self.online = model\n\n"
        "    def update(self):\n        x = 1\n{BODY}\n", "self.online", 8,
    ),
    "ctor_kept_in_list": (
        "class EMA(nn.Module):\n    def __init__(self, model):\n        super().__init__()\n"
        "        self.online = [model]\n        self.scale = nn.Linear(4, 4)\n\n"
        "    def forward(self, x):\n        return self.scale(x)\n\n"
        "    def update(self):\n        x = 1\n{BODY}\n", "self.online[0]", 8,
    ),
    "ctor_property": (
        "class Tracker:\n    def __init__(self, model, keep=True):\n        self._online = model\n\n"
        "    @property\n    def model(self):\n        return self._online\n\n"
        "    def update(self):\n        x = 1\n{BODY}\n", "self.model", 8,
    ),
    "ctor_argument": (
        "class Wrapper(nn.Module):\n    def __init__(self, model: nn.Module):\n        super().__init__()\n"
        "        self.model = model\n{BODY}\n\n    def forward(self, x):\n        return self.model(x)\n", "model", 8,
    ),
}

# a plain object (no module) holding a built model, used whole by the model operations that pickle or copy it:
# source -> (code with {BODY}, the holder's expression, body indent); the "plain" look-alike holds settings only
HOLDER_SOURCES: dict[str, tuple[str, str, int]] = {
    "holder_self": (
        "class Agent:\n    def __init__(self, net: nn.Module, gamma=0.99):\n        self.net = net\n"
        "        self.gamma = gamma\n\n    def snapshot(self):\n        x = 1\n{BODY}\n", "self", 8,
    ),
    "holder_local": (
        "class Agent:\n    def __init__(self, net: nn.Module, gamma=0.99):\n        self.net = net\n"
        "        self.gamma = gamma\n\n\ndef ship(model: nn.Module):\n    x = 1\n    agent = Agent(model)\n{BODY}\n",
        "agent", 4,
    ),
}
HOLDER_OPS = ("deepcopy", "saved_whole", "pickled", "sent")


def holder_cell(source: str, path: str, op: str, variant: str) -> str:
    """A holder cell: `variant` is "hazard" or "plain" (the class holds settings, no module)."""
    code, holder, indent = HOLDER_SOURCES[source]
    if variant == "plain":
        code = code.replace("net: nn.Module", "net: float").replace("Agent(model)", "Agent(0.5)")
    lines, helper = MODEL_PATHS[path]
    operation = MODEL_OPS[op] + KEY
    if helper:
        helper_code = helper.replace("{OP}", textwrap.indent(operation, " " * _op_indent(helper)).lstrip())
        return HEAD + helper_code + "\n\n" + code.replace("{BODY}", _indent(lines.replace("M", holder), indent))
    body = lines.replace("M", holder).replace("{OP}", textwrap.indent(operation, " " * _op_indent(lines)).lstrip())
    return HEAD + code.replace("{BODY}", _indent(body, indent))


# path -> (lines binding `p` to a parameter of M then `{OP}`, helper lines at module level or "").
# `{OP}` stands on its own line at the path's indent; `M` is the built model's expression.
PARAM_PATHS: dict[str, tuple[str, str]] = {
    "parameters_loop": ("for p in M.parameters():\n    {OP}", ""),
    "zip_named": ("for (_, p), (_, q) in zip(M.named_parameters(), M.named_parameters()):\n    {OP}", ""),
    "filtered_list": ("params = [p for p in M.parameters() if p.requires_grad]\nfor p in params:\n    {OP}", ""),
    "dict_items": ("table = dict(M.named_parameters())\nfor name, p in table.items():\n    {OP}", ""),
    "generator_of_file": ("for n, p in iter_params(M):\n    {OP}", ""),
    "helper_of_file": ("touch(M)", "def touch(m):\n    for p in m.parameters():\n        {OP}\n"),
    "list_holding_model": ("held = [M]\nfor p in held[0].parameters():\n    {OP}", ""),
    "tuple_unpacking": ("a, b = M, None\nfor p in a.parameters():\n    {OP}", ""),
    "append_enumerate": ("ps = []\nfor p in M.parameters():\n    ps.append(p)\nfor i, p in enumerate(ps):\n    {OP}", ""),
    "attribute_path": ("p = M.fc.weight\n{OP}", ""),
    "getattr_unwrap": ("m = getattr(M, 'module', M)\nfor p in m.parameters():\n    {OP}", ""),
}
# container path -> (lines binding `p` through a container made from M then `{OP}`, helper lines or "", the same
# lines over a container of plain tensors).
CONTAINER_HEAD = """from collections import OrderedDict

from mylib import get_params, make_functional
from tensordict import TensorDict


"""
CONTAINER_PATHS: dict[str, tuple[str, str, str]] = {
    "from_module": (
        "params = TensorDict.from_module(M)\nfor key, p in params.items(True, True):\n    {OP}", "",
        "params = TensorDict({'w': torch.zeros(4096)}, [])\nfor key, p in params.items(True, True):\n    {OP}",
    ),
    "functional": (
        "fmodel, params = make_functional(M)\nfor p in params:\n    {OP}", "",
        "fmodel, params = make_functional(lambda x: x)\nfor p in params:\n    {OP}",
    ),
    "imported_helper": (
        "params = get_params(M)\nfor p in params.values():\n    {OP}", "",
        "params = get_params({'lr': 0.1})\nfor p in params.values():\n    {OP}",
    ),
    "ordered_dict": (
        "params = OrderedDict(M.named_parameters())\nfor p in params.values():\n    {OP}", "",
        "params = OrderedDict(w=torch.zeros(4096))\nfor p in params.values():\n    {OP}",
    ),
    "dict_comprehension": (
        "params = {k: v for k, v in M.named_parameters()}\np = params['fc.weight']\n{OP}", "",
        "params = {k: torch.zeros(4096) for k in ('a', 'b')}\np = params['a']\n{OP}",
    ),
    "list_index": (
        "params = list(M.parameters())\np = params[0]\n{OP}", "",
        "params = list(torch.zeros(4, 4096))\np = params[0]\n{OP}",
    ),
    "container_subscript": (
        "params = TensorDict.from_module(M)\np = params['fc', 'weight']\n{OP}", "",
        "params = TensorDict({'w': torch.zeros(4096)}, [])\np = params['w']\n{OP}",
    ),
    "container_attribute": (
        "params = TensorDict.from_module(M)\np = params.fc.weight\n{OP}", "",
        "params = TensorDict({'w': torch.zeros(4096)}, [])\np = params.w\n{OP}",
    ),
    "container_apply": (
        "params = TensorDict.from_module(M)\nparams.apply(touch)", "def touch(p):\n    {OP}\n    return p\n",
        "params = TensorDict({'w': torch.zeros(4096)}, [])\nparams.apply(touch)",
    ),
    "container_helper": (
        "params = TensorDict.from_module(M)\ntouch_all(params)",
        "def touch_all(ps):\n    for key, p in ps.items(True, True):\n        {OP}\n",
        "params = TensorDict({'w': torch.zeros(4096)}, [])\ntouch_all(params)",
    ),
    "getattr_parts": (
        "parts = {n: getattr(M, n) for n in names}\nsources = TensorDict(parts, [])\n"
        "for key, p in sources.items(True, True):\n    {OP}", "",
        "parts = {n: torch.zeros(4096) for n in names}\nsources = TensorDict(parts, [])\n"
        "for key, p in sources.items(True, True):\n    {OP}",
    ),
}
# paths that bind the model itself to `m` (for operations on the model as a whole)
MODEL_PATHS: dict[str, tuple[str, str]] = {
    "direct": ("m = M\n{OP}", ""),
    "helper_of_file": ("keep(M)", "def keep(m):\n    {OP}\n"),
    "list_holding_model": ("held = [M]\nm = held[0]\n{OP}", ""),
    "tuple_unpacking": ("m, other = M, None\n{OP}", ""),
    "getattr_unwrap": ("m = getattr(M, 'module', M)\n{OP}", ""),
    "conditional": ("m = M if x else M\n{OP}", ""),
}

PARAM_OPS = {
    "data_write": "p.data.mul_(0.5)",
    "numel": "n = p.numel()",
    "initialiser": "torch.nn.init.zeros_(p)",
    "data_read": "v = p.data.clone()",
    "ones_like": "r = torch.ones_like(p)",
    "broadcast": "torch.distributed.broadcast(p.data, 0)",
    "lerp_toward": "torch.zeros(4096).lerp_(p.data, 0.005)",
    "copy_from": "torch.empty(4096).copy_(p.data)",
    "min_reduce": "lo = p.data.min().item()",
    "norm": "n = p.norm()",
    "detach_clone": "c = p.detach().clone()",
    "save": "torch.save(p, 'p.pt')",
    "grad_read": "g = p.grad.data.norm(2).item()",
}
MODEL_OPS = {
    "deepcopy": "c = copy.deepcopy(m)",
    "state_dict_saved": "torch.save(m.state_dict(), 'w.pt')",
    "load_state_dict": "m.load_state_dict(torch.load('w.pt'))",
    "saved_whole": "torch.save(m, 'm.pt')",
    "pickled": "blob = pickle.dumps(m)",
    "sent": "pipe.send(m)",
    "clip_grads": "torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)",
}
# the same operations on an object that is no partitioned model: an optimizer built in the scope (the "plain"
# look-alike of a model operation)
PLAIN_MODEL = "torch.optim.SGD([torch.zeros(4)], lr=0.1)"
KEY = "  # key"


def _indent(text: str, by: int) -> str:
    return textwrap.indent(text, " " * by)


def _gathered(op: str, subject: str) -> str:
    return f"with deepspeed.zero.GatheredParameters({subject}, modifier_rank=0):\n    {op}"


def cell(source: str, path: str, op: str, variant: str) -> str:
    """The file of one cell: `variant` is "hazard", "gathered", "local" or (container paths) "plain"."""
    code, model, indent = SOURCES[source]
    is_param = op in PARAM_OPS
    head = HEAD
    if path in CONTAINER_PATHS:
        lines, helper, plain = CONTAINER_PATHS[path]
        head = HEAD + CONTAINER_HEAD
        if source == "ctor_argument":
            code = code.replace("{BODY}", "        names = ['fc']\n{BODY}")
        else:
            code = code.replace("{BODY}", " " * indent + "names = ['fc']\n{BODY}")
        if variant == "plain":
            lines = plain
    else:
        lines, helper = (PARAM_PATHS if is_param else MODEL_PATHS)[path]
    operation = (PARAM_OPS if is_param else MODEL_OPS)[op] + KEY
    if variant == "gathered":
        operation = _gathered(operation, "[p]" if is_param else "list(m.parameters())")
    body = lines
    prefix = ""
    if variant == "plain" and not is_param:
        prefix = f"opt = {PLAIN_MODEL}\n"
        model = "opt"
    if variant == "local":
        prefix = "built = nn.Linear(4096, 4096)\nbuilt.fc = nn.Linear(4096, 4096)\n"
        model = "built"
    if helper:
        # the helper runs the operation; the source hands it the model
        helper_code = helper.replace("{OP}", textwrap.indent(operation, " " * _op_indent(helper)).lstrip())
        body = prefix + lines.replace("M", model)
        text = head + helper_code + "\n\n" + code.replace("{BODY}", _indent(body, indent))
        return text
    op_indent = _op_indent(lines)
    body = prefix + lines.replace("M", model).replace("{OP}", textwrap.indent(operation, " " * op_indent).lstrip())
    return head + code.replace("{BODY}", _indent(body, indent))


def _op_indent(lines: str) -> int:
    for line in lines.splitlines():
        if "{OP}" in line:
            return len(line) - len(line.lstrip())
    return 0


def key_line(text: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.endswith(KEY))


def run(show_fails: int = 0, json_path: Path | None = None) -> int:
    cells = []
    for source in SOURCES:
        for ops, paths in ((PARAM_OPS, PARAM_PATHS), (MODEL_OPS, MODEL_PATHS)):
            for path in paths:
                for op in ops:
                    cells.append((source, path, op))
        for path in CONTAINER_PATHS:
            for op in PARAM_OPS:
                cells.append((source, path, op))
    by_axis: dict[str, dict[str, list[int]]] = {"source": defaultdict(lambda: [0, 0, 0, 0]),
                                                "path": defaultdict(lambda: [0, 0, 0, 0]),
                                                "operation": defaultdict(lambda: [0, 0, 0, 0])}
    found = clean = safe_total = 0
    per_variant = {"gathered": [0, 0], "local": [0, 0], "plain": [0, 0]}
    fails: list[str] = []
    outcomes = []
    for source in HOLDER_SOURCES:
        for path in MODEL_PATHS:
            for op in HOLDER_OPS:
                cells.append((source, path, op))
    for source, path, op in cells:
        make = holder_cell if source in HOLDER_SOURCES else cell
        text = make(source, path, op, "hazard")
        line = key_line(text)
        findings = [f for f in check_source("cell.py", text) if f.code.startswith("ZG1")]
        hit = any(f.line <= line <= max(f.end_line or f.line, f.line) for f in findings)
        found += hit
        safe_ok = 0
        variants = ("gathered", "local", "plain") if path in CONTAINER_PATHS or op in MODEL_OPS else ("gathered", "local")
        if source in HOLDER_SOURCES:
            variants = ("plain",)
        for variant in variants:
            look = make(source, path, op, variant)
            ok = not [f for f in check_source("cell.py", look) if f.code.startswith("ZG1")]
            safe_ok += ok
            per_variant[variant][0] += ok
            per_variant[variant][1] += 1
            if not ok:
                fails.append(f"SAFE FLAGGED {source} x {path} x {op} ({variant})")
        clean += safe_ok
        safe_total += len(variants)
        if not hit:
            fails.append(f"missed {source} x {path} x {op}")
        for axis, value in (("source", source), ("path", path), ("operation", op)):
            row = by_axis[axis][value]
            row[0] += hit
            row[1] += 1
            row[2] += safe_ok
            row[3] += len(variants)
        outcomes.append({"source": source, "path": path, "operation": op, "found": hit, "safe_clean": safe_ok})
    print(f"cells: {len(cells) + safe_total} ({len(cells)} hazard, {safe_total} safe)")
    print(f"recall: {found}/{len(cells)} ({found / len(cells):.2f})   clean: {clean}/{safe_total} ({clean / safe_total:.2f})")
    print("  " + "   ".join(f"{v}: {ok}/{n}" for v, (ok, n) in per_variant.items()))
    for axis, rows in by_axis.items():
        print(f"\n{axis:<26} {'recall':>17} {'clean':>16}")
        for value, (hit, total, ok, safe) in rows.items():
            print(f"{value:<26} {hit:>7}/{total:<3} ({hit / total:.2f})  {ok:>6}/{safe:<3} ({ok / safe:.2f})")
    for line in fails[:show_fails]:
        print(line)
    if json_path is not None:
        json_path.write_text(json.dumps(outcomes, indent=1))
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--show-fails", type=int, default=0, metavar="N", help="print the first N failing cells")
    p.add_argument("--json", type=Path, help="write every cell's outcome here")
    p.add_argument("--print", nargs=4, metavar=("SOURCE", "PATH", "OP", "VARIANT"), help="print one cell and exit")
    args = p.parse_args(argv)
    if args.print:
        print((holder_cell if args.print[0] in HOLDER_SOURCES else cell)(*args.print))
        return 0
    return run(args.show_fails, args.json)


if __name__ == "__main__":
    sys.exit(main())
