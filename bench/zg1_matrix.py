"""A combinatorial matrix of ZG1/ZG3 parameter-access hazards and their safe look-alikes; prints figures.

    python bench/zg1_matrix.py                       # the whole product, summary by axis
    python bench/zg1_matrix.py --show-fails 40       # and the first 40 failing cells
    python bench/zg1_matrix.py --spellings nn        # one spelling only (quick)
    python bench/zg1_matrix.py --keep /tmp/zg1m      # keep the generated files

Each cell is one small model file, generated as the product of three independent axes:

* **access**: what the code does to a parameter of a built module (or, on the safe side, a
  look-alike that is no hazard): writes (`.data =`, `.data.copy_`, `.fill_`, `nn.init.*_`),
  initialisation through `apply(fn)`, `apply(partial(fn, ...))`, `named_apply`, a
  `modules()` loop, reads (`.data`, `.shape`, `.numel()`, `.size()`), `load_state_dict`,
  `state_dict()` saved or its tensors written in place, torch's per-module halves
  (`_load_from_state_dict`, `_save_to_state_dict`) called directly or by a nested walker, `copy.deepcopy`, `clip_grad_norm_`, EMA /
  target-network updates,
  `parameters_to_vector` / `vector_to_parameters`, an average updated from the model
  (`shadow.update_parameters(model)`), a norm's small weight read outside any forward (persistence keeps a small
  parameter gathered only once a forward or a step fetched it; in forward it is a safe look-alike), a parameter
  list chosen by a conditional expression or chained with the
  buffers, gradients clipped over an optimizer's `param_groups` (also through a name bound to
  `clip_grad_norm_`), a child's `reset_parameters()`, a
  parameter created in forward, and the ZG3 forms (another module's weight read, `.forward`
  called, a bound `forward` handed on, a child's non-forward method, a ModuleDict loop);
* **holder**: where that code sits: the model's `__init__` after its children are built or
  a helper it calls, `forward` or a helper it calls, a function nested in `forward`, a
  method run from the training loop, a module-level function given the model, a class that
  is no module holding the model or receiving it, a lambda, `extra_repr`, a forward pre-hook, and code that
  reaches the model through another object: a hook handed a framework object (`runner.model`), a callback
  holding one (`self.trainer.network`), an item of a collection tested to be a module (`isinstance(obj,
  nn.Module)`); and (issue 20) a free function or a plain class's method handed a module and an input that
  runs it by hand, and a wrapper whose base-class helper or property computes with the module
  it was handed, used in the subclass's forward;
* **spelling**: how the same code is written: `import torch.nn as nn`, `from torch import nn`,
  `torch.nn.*` only, bare names imported from `torch.nn`, a base class of the file, method
  decorators (`@torch.no_grad()`, `@torch.inference_mode()`, a custom one, a `@beartype`-like
  one), annotations (`model: nn.Module`, string annotations), aliases (`init = nn.init`,
  `from torch.nn.init import normal_`) and keyword arguments.

Expected outcome per cell: a *hazard* cell is found when `zgen check` (the installed CLI,
as users run it) reports a ZG1xx or ZG3xx finding whose rows include the cell's key line
(the line of the access; for a multi-line form the line named in `ACCESSES`) within one
line either side. A *safe* cell is clean when the file gets no ZG1xx/ZG3xx finding at all.
Cells where ZeRO-3 gives no clear answer are left out (`None` in `expect`).

Prints recall per axis value (hazard cells found / hazard cells), clean rate per axis value,
totals, and the failing cells (access, holder, spelling, key line, what zgen said).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

# --------------------------------------------------------------------------------------------
# Spelling axis
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Spelling:
    name: str
    imports: str
    mod: str = "nn.Module"  # base class of modules
    lin: str = "nn.Linear"
    norm: str = "nn.LayerNorm"
    mdict: str = "nn.ModuleDict"
    param: str = "nn.Parameter"
    init_prefix: str = "nn.init."  # prefix of the in-place initialisers
    extra: str = ""  # definitions after the imports
    deco: str = ""  # decorator line on methods and functions holding the access
    ann: str = ""  # annotation of a model argument
    kw: bool = False  # keyword arguments in constructor and initialiser calls
    base: str = ""  # a base class of the file between the model classes and `mod`

    def linear(self, n: int = 4096) -> str:
        return f"{self.lin}(in_features={n}, out_features={n})" if self.kw else f"{self.lin}({n}, {n})"

    def init(self, fn: str, target: str, arg: str) -> str:
        return f"{self.init_prefix}{fn}(tensor={target}, {arg})" if self.kw else f"{self.init_prefix}{fn}({target}, {arg})"

    @property
    def module_base(self) -> str:
        return "Base" if self.base else self.mod


_NN = "import torch\nimport torch.nn as nn\n"
SPELLINGS = (
    Spelling("nn", _NN),
    Spelling("from_torch_nn", "import torch\nfrom torch import nn\n"),
    Spelling("torch_only", "import torch\n", mod="torch.nn.Module", lin="torch.nn.Linear", norm="torch.nn.LayerNorm",
             mdict="torch.nn.ModuleDict", param="torch.nn.Parameter", init_prefix="torch.nn.init."),
    Spelling("bare_names", "import torch\nfrom torch.nn import LayerNorm, Linear, Module, ModuleDict, ModuleList, Parameter\n"
             "from torch.nn import init\n", mod="Module", lin="Linear", norm="LayerNorm", mdict="ModuleDict",
             param="Parameter", init_prefix="init."),
    Spelling("base_class", _NN, base="class Base(nn.Module):\n    pass\n"),
    Spelling("deco_no_grad", _NN, deco="@torch.no_grad()"),
    Spelling("deco_inference", _NN, deco="@torch.inference_mode()"),
    Spelling("deco_custom", _NN + "import functools\n",
             extra="def logged(fn):\n    @functools.wraps(fn)\n    def wrapper(*args, **kwargs):\n"
                   "        return fn(*args, **kwargs)\n    return wrapper\n", deco="@logged"),
    Spelling("deco_beartype", _NN + "from beartype import beartype\n", deco="@beartype"),
    Spelling("annotated", _NN, ann=": nn.Module"),
    Spelling("annotated_str", _NN, ann=': "Net"'),
    Spelling("alias_init", _NN, extra="init = nn.init\n", init_prefix="init."),
    Spelling("from_init_import", _NN + "from torch.nn.init import normal_, trunc_normal_, zeros_\n", init_prefix=""),
    Spelling("keywords", _NN, kw=True),
)

# --------------------------------------------------------------------------------------------
# Access axis: each returns (lines, key line index within them, needs) for a model expression `m`
# --------------------------------------------------------------------------------------------

HAZARD, SAFE = "hazard", "safe"
INIT_HOLDERS = ("init", "init_helper")  # under construction, inside zero.Init
FORWARD_HOLDERS = ("forward", "forward_helper", "nested", "lambda")
MODULE_HOLDERS = ("init", "init_helper", "forward", "forward_helper", "nested", "entry", "lambda", "repr", "prehook")
# code that is no module and reaches a model it did not build: handed it, holding it, or through another object
# (a hook handed a framework object, `runner.model`; a callback holding one, `self.trainer.network`; an item of a
# collection of things to save or load, tested to be a module)
OTHER_OBJECT_HOLDERS = ("hook_arg", "hook_attr", "collection")
OUTSIDE_HOLDERS = ("function", "trainer_attr", "trainer_arg") + OTHER_OBJECT_HOLDERS
ALL_HOLDERS = MODULE_HOLDERS + OUTSIDE_HOLDERS
# Issue 20 (blind5's ZG3): a module run by hand -- a free function or a plain class's method handed a module and a
# tensor input `x` (`m` is the module) -- and a wrapper holding a module it was handed whose helper (a base-class
# method or property, `m` is `self.wrapped`) computes with it, used in the subclass's forward (the key line).
BY_HAND_HOLDERS = ("by_hand_fn", "by_hand_method")
WRAPPER_HOLDERS = ("wrapper_method", "wrapper_property")
EVERY_HOLDER = ALL_HOLDERS + BY_HAND_HOLDERS + WRAPPER_HOLDERS


@dataclass(frozen=True)
class Access:
    name: str
    family: str  # ZG1 or ZG3 (the axis; any ZG1/ZG3 finding on the key line counts)
    lines: object  # (m, spelling) -> list[str]
    key: int = 0  # index of the key line
    holders: tuple[str, ...] = ALL_HOLDERS
    safe_in: tuple[str, ...] = ()  # holders where the form is no hazard
    skip_in: tuple[str, ...] = ()  # holders where ZeRO-3 gives no clear answer
    expression: bool = False  # one expression (can sit in a lambda)
    safe: bool = False  # a safe look-alike everywhere it is generated
    imports: str = ""
    callback: str = ""  # a function of the file the access hands on; a finding on its write counts too

    def expect(self, holder: str) -> str | None:
        if holder in self.skip_in:
            return None
        if self.safe or holder in self.safe_in:
            return SAFE
        return HAZARD


X = "torch.randn(2, 4096)"

ACCESSES = (
    # ---- ZG1 writes
    Access("data_assign", "ZG1", lambda m, s: [f"{m}.fc.weight.data = torch.zeros(4096, 4096)"]),
    Access("data_copy", "ZG1", lambda m, s: [f"{m}.fc.weight.data.copy_(torch.zeros(4096, 4096))"], expression=True),
    Access("fill", "ZG1", lambda m, s: [f"{m}.fc.weight.fill_(0.0)"], expression=True),
    Access("nn_init", "ZG1", lambda m, s: [s.init("normal_", f"{m}.fc.weight", "std=0.02")], expression=True),
    Access("nn_init_trunc", "ZG1", lambda m, s: [s.init("trunc_normal_", f"{m}.fc.weight", "std=0.02")], expression=True),
    Access("apply_own", "ZG1", lambda m, s: [f"{m}.apply(init_own)"], expression=True, safe_in=INIT_HOLDERS,
           callback="init_own"),
    Access("apply_child", "ZG1", lambda m, s: [f"{m}.apply(init_child)"], expression=True, callback="init_child"),
    Access("apply_partial_child", "ZG1", lambda m, s: [f"{m}.apply(partial(init_child_std, std=0.02))"],
           callback="init_child_std", expression=True, imports="from functools import partial\n"),
    Access("named_apply", "ZG1", lambda m, s: [f"named_apply(init_named, {m})"], expression=True, callback="init_named"),
    Access("modules_loop", "ZG1", lambda m, s: [
        f"for mod in {m}.modules():",
        f"    if isinstance(mod, {s.lin}):",
        "        " + s.init("normal_", "mod.weight", "std=0.02"),
    ], key=2),
    Access("child_reset", "ZG1", lambda m, s: [f"{m}.fc.reset_parameters()"], expression=True),
    # ---- ZG1 reads and sizes
    Access("data_read", "ZG1", lambda m, s: [f"w = {m}.fc.weight.data.clone()"]),
    Access("shape", "ZG1", lambda m, s: [f"n = {m}.fc.weight.shape[0]"], skip_in=("repr",)),
    Access("numel", "ZG1", lambda m, s: [f"n = {m}.fc.weight.numel()"], skip_in=("repr",)),
    Access("size", "ZG1", lambda m, s: [f"n = {m}.fc.weight.size(0)"], skip_in=("repr",)),
    # ---- ZG1 whole-model uses
    Access("load_state_dict", "ZG1", lambda m, s: [f"{m}.load_state_dict(torch.load('ckpt.pt'))"], expression=True),
    Access("load_state_dict_child", "ZG1", lambda m, s: [f"{m}.fc.load_state_dict(torch.load('fc.pt'))"],
           expression=True),
    Access("state_dict_saved", "ZG1", lambda m, s: [f"torch.save({m}.state_dict(), 'ckpt.pt')"], expression=True,
           skip_in=INIT_HOLDERS + FORWARD_HOLDERS + ("prehook",)),
    Access("deepcopy", "ZG1", lambda m, s: [f"twin = copy.deepcopy({m})"], imports="import copy\n",
           skip_in=FORWARD_HOLDERS + ("prehook",)),
    Access("clip_grad", "ZG1", lambda m, s: [f"torch.nn.utils.clip_grad_norm_({m}.parameters(), 1.0)"],
           expression=True, skip_in=INIT_HOLDERS + FORWARD_HOLDERS + ("repr", "prehook")),
    Access("ema_mul_add", "ZG1", lambda m, s: [
        f"for p_t, p in zip({m}.head.parameters(), {m}.fc.parameters()):",
        "    p_t.data.mul_(0.99).add_(p.data, alpha=0.01)",
    ], key=1),
    Access("ema_lerp", "ZG1", lambda m, s: [
        f"for p_t, p in zip({m}.head.parameters(), {m}.fc.parameters()):",
        "    p_t.lerp_(p, 0.01)",
    ], key=1),
    Access("ema_copy", "ZG1", lambda m, s: [
        f"for p_t, p in zip({m}.head.parameters(), {m}.fc.parameters()):",
        "    p_t.data.copy_(p.data)",
    ], key=1),
    Access("state_dict_write", "ZG1", lambda m, s: [
        f"for k, v in {m}.state_dict().items():",
        "    v.mul_(0.5)",
    ], key=1, skip_in=("repr",)),
    Access("params_to_vector", "ZG1", lambda m, s: [f"vec = torch.nn.utils.parameters_to_vector({m}.parameters())"],
           skip_in=("repr",)),
    Access("vector_to_params", "ZG1", lambda m, s: [
        "vec = torch.zeros(4096 * 4096)",
        f"torch.nn.utils.vector_to_parameters(vec, {m}.parameters())",
    ], key=1),
    Access("param_in_forward", "ZG1", lambda m, s: [f"{m}.extra = {s.param}(torch.zeros(4096, 4096))"],
           holders=("forward", "forward_helper")),
    Access("avg_update_model", "ZG1", lambda m, s: [f"shadow.update_parameters({m})"], expression=True,
           imports="from averaging import shadow\n", holders=("entry",) + OUTSIDE_HOLDERS),
    Access("avg_step_model", "ZG1", lambda m, s: [f"shadow.step({m})"], expression=True,
           imports="from averaging import shadow\n", holders=("entry",) + OUTSIDE_HOLDERS),
    Access("swap_chain", "ZG1", lambda m, s: [
        f"avg_params = itertools.chain({m}.head.parameters(), {m}.head.buffers()) if flag else {m}.head.parameters()",
        "for p_avg, p_src in zip(avg_params, [torch.zeros(4096, 4096)]):",
        "    p_avg.data.copy_(p_src)",
    ], key=2, imports="import itertools\nflag = True\n", holders=("entry",) + OUTSIDE_HOLDERS),
    Access("clip_groups_comp", "ZG1", lambda m, s: [
        f"opt = torch.optim.SGD({m}.parameters(), lr=0.1)",
        "params = [p for g in opt.param_groups for p in g['params']]",
        "torch.nn.utils.clip_grad_norm_(params, 1.0)",
    ], key=2, holders=("entry",) + OUTSIDE_HOLDERS),
    Access("clip_groups_extend_alias", "ZG1", lambda m, s: [
        f"opt = torch.optim.SGD({m}.parameters(), lr=0.1)",
        "clip = torch.nn.utils.clip_grad_norm_",
        "params = []",
        "for group in opt.param_groups:",
        "    params.extend(group['params'])",
        "clip(params, max_norm=1.0)",
    ], key=5, holders=("entry",) + OUTSIDE_HOLDERS),
    Access("clip_group_index", "ZG1", lambda m, s: [
        f"opt = torch.optim.SGD({m}.parameters(), lr=0.1)",
        "torch.nn.utils.clip_grad_value_(opt.param_groups[0]['params'], 0.5)",
    ], key=1, holders=("entry",) + OUTSIDE_HOLDERS),
    Access("load_from_state_dict", "ZG1", lambda m, s: [
        f"{m}._load_from_state_dict(torch.load('ckpt.pt'), '', {{}}, True, [], [], [])"
    ], expression=True, holders=("entry",) + OUTSIDE_HOLDERS),
    Access("save_to_state_dict", "ZG1", lambda m, s: ["dest = {}", f"{m}._save_to_state_dict(dest, '', False)"],
           key=1, holders=("entry",) + OUTSIDE_HOLDERS),
    Access("state_walker_helper", "ZG1", lambda m, s: [
        "def load(module, sd):",
        "    module._load_from_state_dict(sd, '', {}, True, [], [], [])",
        f"load({m}, torch.load('ckpt.pt'))",
    ], key=2, holders=("entry",) + OUTSIDE_HOLDERS),
    # ---- ZG3
    Access("other_weight", "ZG3", lambda m, s: [f"y = torch.nn.functional.linear({X}, {m}.fc.weight)"],
           skip_in=("repr",)),
    Access("child_forward", "ZG3", lambda m, s: [f"y = {m}.fc.forward({X})"], expression=True,
           skip_in=("repr",)),
    Access("self_forward", "ZG3", lambda m, s: [f"y = {m}.forward({X})"],
           holders=("entry",) + OUTSIDE_HOLDERS),
    Access("forward_callback", "ZG3", lambda m, s: [f"y = run_fn(fn={m}.fc.forward)"], skip_in=("repr",)),
    Access("child_method", "ZG3", lambda m, s: [f"y = {m}.blk.logits({X})"], expression=True,
           skip_in=("repr",)),
    Access("child_property", "ZG3", lambda m, s: [f"y = {X} @ {m}.blk.table"], holders=FORWARD_HOLDERS[:-1]),
    Access("moduledict_loop", "ZG3", lambda m, s: [
        f"for name, h in {m}.heads.items():",
        f"    y = torch.nn.functional.linear({X}, h.weight)",
    ], key=1, skip_in=("repr",)),
    # ---- safe look-alikes
    Access("safe_buffer_write", "ZG1", lambda m, s: [f"{m}.mask.data.fill_(0.0)"], safe=True, expression=True),
    Access("safe_buffer_shape", "ZG1", lambda m, s: [f"n = {m}.mask.shape[0]"], safe=True),
    Access("safe_meta", "ZG1", lambda m, s: [f"dt = ({m}.fc.weight.dtype, {m}.fc.weight.device)"], safe=True),
    Access("safe_gathered_init", "ZG1", lambda m, s: [
        f"with deepspeed.zero.GatheredParameters({m}.fc.weight, modifier_rank=0):",
        "    " + s.init("normal_", f"{m}.fc.weight", "std=0.02"),
    ], key=1, safe=True, imports="import deepspeed\n"),
    Access("safe_gathered_state_dict", "ZG1", lambda m, s: [
        f"with deepspeed.zero.GatheredParameters(list({m}.parameters()), modifier_rank=None):",
        f"    sd = {m}.state_dict()",
    ], key=1, safe=True, imports="import deepspeed\n", holders=("entry",) + OUTSIDE_HOLDERS),
    Access("safe_small_read", "ZG1", lambda m, s: [f"y = {X} * {m}.norm.weight"], safe=True,
           holders=FORWARD_HOLDERS),
    # outside any forward nothing has fetched a small parameter (persistence keeps one gathered only once fetched)
    Access("small_read_outside", "ZG1", lambda m, s: [f"y = {X} * {m}.norm.weight"], holders=("entry",) + OUTSIDE_HOLDERS),
    Access("safe_small_gathered", "ZG1", lambda m, s: [
        f"with deepspeed.zero.GatheredParameters([{m}.norm.weight]):",
        f"    y = {X} * {m}.norm.weight",
    ], key=1, safe=True, imports="import deepspeed\n", holders=("entry",) + OUTSIDE_HOLDERS),
    Access("safe_activation", "ZG1", lambda m, s: [
        "with torch.no_grad():",
        f"    h = {m}.fc({X})",
        "    h.mul_(0.5).add_(1.0)",
    ], key=2, safe=True, holders=FORWARD_HOLDERS[:-1] + ("entry",) + OUTSIDE_HOLDERS),
    Access("safe_own_init", "ZG1", lambda m, s: [s.init("normal_", f"{m}.scale", "std=0.02")], safe=True,
           holders=INIT_HOLDERS),
    Access("safe_own_read", "ZG1", lambda m, s: [f"y = {X} @ {m}.scale.data"], safe=True,
           holders=("forward", "forward_helper", "nested")),
    Access("safe_apply_own", "ZG1", lambda m, s: [f"{m}.apply(init_own)"], safe=True, holders=INIT_HOLDERS),
    Access("safe_config_path", "ZG1", lambda m, s: [f"spec = copy.deepcopy({m}.cfg.model)"], safe=True,
           imports="import copy\n", holders=("entry",) + OUTSIDE_HOLDERS),
    Access("safe_avg_update_setting", "ZG1", lambda m, s: [f"shadow.update({m}.cfg.model)"], safe=True,
           imports="from averaging import shadow\n", holders=("entry",) + OUTSIDE_HOLDERS),
    Access("safe_group_lr", "ZG1", lambda m, s: [
        f"opt = torch.optim.SGD({m}.parameters(), lr=0.1)",
        "for group in opt.param_groups:",
        "    group['lr'] = group['lr'] * 0.5",
    ], key=2, safe=True, holders=("entry",) + OUTSIDE_HOLDERS),
    # ---- ZG3: a module run by hand (its parameter meets the input `x`), and a wrapper's helper used in forward
    Access("hand_linear", "ZG3", lambda m, s: [f"y = torch.nn.functional.linear(x, {m}.weight * 0.5, {m}.bias)"],
           holders=BY_HAND_HOLDERS),
    Access("hand_local_conv_forward", "ZG3", lambda m, s: [f"w = {m}.weight * 0.5", f"y = {m}._conv_forward(x, w, None)"],
           key=1, holders=BY_HAND_HOLDERS),
    Access("hand_matmul", "ZG3", lambda m, s: [f"y = x @ {m}.weight.t()"], holders=BY_HAND_HOLDERS),
    Access("helper_masked", "ZG3", lambda m, s: [f"return {m}.weight * self.mask"], holders=WRAPPER_HOLDERS),
    Access("helper_local", "ZG3", lambda m, s: [f"w = {m}.weight", "return w * self.mask"], key=1,
           holders=WRAPPER_HOLDERS),
    Access("safe_hand_called", "ZG3", lambda m, s: [f"y = {m}(x).to({m}.weight.dtype)"], safe=True,
           holders=BY_HAND_HOLDERS),
    Access("safe_hand_gathered", "ZG3", lambda m, s: [
        f"with deepspeed.zero.GatheredParameters([{m}.weight]):",
        f"    y = torch.nn.functional.linear(x, {m}.weight)",
    ], key=1, safe=True, holders=BY_HAND_HOLDERS, imports="import deepspeed\n"),
    Access("safe_helper_meta", "ZG3", lambda m, s: [f"return {m}.weight.dtype"], safe=True, holders=WRAPPER_HOLDERS),
    Access("safe_helper_bias", "ZG3", lambda m, s: [f"return {m}.bias * 0.5"], safe=True, holders=WRAPPER_HOLDERS),
    Access("safe_external_registered", "ZG3", lambda m, s: [f"y = torch.nn.functional.linear({X}, {m}.emb.weight)"],
           safe=True, holders=("forward",), imports="import deepspeed\n"),
)

# --------------------------------------------------------------------------------------------
# Holder axis: builds the file around the access lines
# --------------------------------------------------------------------------------------------


def _indent(lines: list[str], n: int) -> list[str]:
    return [" " * n + ln for ln in lines]


@dataclass
class Cell:
    access: Access
    holder: str
    spelling: Spelling
    text: str = ""
    key_line: int = 0  # 1-based
    alt_line: int = 0  # the write inside the callback the access hands on (0: none)
    expect: str | None = None
    found: list[dict] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        if self.expect == HAZARD:
            keys = [k for k in (self.key_line, self.alt_line) if k]
            return any(f["row"] - 1 <= k <= f["end"] + 1 for f in self.found for k in keys)
        return not self.found


def _child_classes(s: Spelling, with_method: bool, with_property: bool = False) -> list[str]:
    """The child class; its non-forward method only where the cell calls it (run from a loop, it is a hazard itself)."""
    base = s.module_base
    method = ["    def logits(self, x):", "        return x @ self.weight.t()", ""] if with_method else []
    if with_property:  # a property returning the block's own weight: reading it from outside reads the weight
        method += ["    @property", "    def table(self):", "        return self.weight * 1.0", ""]
    return [
        f"class Block({base}):",
        "    def __init__(self):",
        "        super().__init__()",
        f"        self.weight = {s.param}(torch.randn(4096, 4096))",
        "",
        "    def forward(self, x):",
        "        return x @ self.weight",
        "",
        *method,
        "",
    ]


def _helpers(s: Spelling) -> list[str]:
    """Module-level helpers several accesses name (init callbacks, named_apply, run_fn)."""
    return [
        "def init_own(module):",
        f"    if isinstance(module, {s.lin}):",
        "        " + s.init("normal_", "module.weight", "std=0.02"),
        "",
        "",
        "def init_child(module):",
        "    if isinstance(module, Net):",
        "        " + s.init("normal_", "module.fc.weight", "std=0.02"),
        "",
        "",
        "def init_child_std(module, std):",
        "    if isinstance(module, Net):",
        "        " + s.init("normal_", "module.fc.weight", "std=std"),
        "",
        "",
        "def init_named(module, name=''):",
        f"    if isinstance(module, {s.lin}):",
        "        " + s.init("normal_", "module.weight", "std=0.02"),
        "",
        "",
        "def named_apply(fn, module, name='', depth_first=True, include_root=False):",
        "    if not depth_first and include_root:",
        "        fn(module=module, name=name)",
        "    for child_name, child_module in module.named_children():",
        "        child_name = '.'.join((name, child_name)) if name else child_name",
        "        named_apply(fn=fn, module=child_module, name=child_name, depth_first=depth_first, include_root=True)",
        "    if depth_first and include_root:",
        "        fn(module=module, name=name)",
        "    return module",
        "",
        "",
        "def run_fn(fn):",
        f"    return fn({X})",
        "",
        "",
    ]


def build(cell: Cell) -> None:
    a, h, s = cell.access, cell.holder, cell.spelling
    deco = [s.deco] if s.deco else []
    m = {"function": "model", "trainer_attr": "self.model", "trainer_arg": "model", "hook_arg": "runner.model",
         "hook_attr": "self.trainer.network", "collection": "obj", "by_hand_fn": "layer",
         "by_hand_method": "layer", "wrapper_method": "self.wrapped",
         "wrapper_property": "self.wrapped"}.get(h, "self")
    body = a.lines(m, s)
    head = [ln for ln in (s.imports + a.imports).splitlines()] + [""]
    if s.extra:
        head += s.extra.splitlines() + [""]
    if s.base:
        head += s.base.splitlines() + [""]
    head += [""] + _child_classes(s, a.name == "child_method", a.name == "child_property")
    init = [
        f"class Net({s.module_base}):",
        "    def __init__(self):",
        "        super().__init__()",
        f"        self.fc = {s.linear()}",
        f"        self.head = {s.linear()}",
        f"        self.norm = {s.norm}(4096)",
        "        self.blk = Block()",
        f"        self.heads = {s.mdict}({{'a': {s.linear()}, 'b': {s.linear()}}})",
        f"        self.emb = {s.linear()}",
        f"        self.scale = {s.param}(torch.empty(4096, 4096))",
        "        self.register_buffer('mask', torch.ones(4096, 4096))",
    ]
    if a.name == "safe_external_registered":
        init.append("        deepspeed.zero.register_external_parameter(self, self.emb.weight)")
    fwd = ["", *(_indent(deco, 4)), "    def forward(self, x):"]
    fwd_tail = ["        return self.head(self.fc(x)) + self.blk(x)"]
    methods: list[str] = []
    outside: list[str] = []
    if h == "init":
        init.extend(_indent(body, 8))
        start_list = init
    elif h == "init_helper":
        init.append("        self._init_weights()")
        methods = ["", *(_indent(deco, 4)), "    def _init_weights(self):", *_indent(body, 8)]
        start_list = methods
    elif h == "forward":
        fwd.extend(_indent(body, 8))
        start_list = fwd
    elif h == "forward_helper":
        fwd.append("        self._tweak()")
        methods = ["", *(_indent(deco, 4)), "    def _tweak(self):", *_indent(body, 8)]
        start_list = methods
    elif h == "nested":
        fwd.extend(["", *(_indent(deco, 8)), "        def inner():", *_indent(body, 12), "", "        inner()"])
        start_list = fwd
    elif h == "lambda":
        expr = body[0].split(" = ", 1)[1] if re.match(r"\w+ = ", body[0]) else body[0]
        body = [f"probe = lambda: {expr}"]
        fwd.extend(["        " + body[0], "        probe()"])
        start_list = fwd
    elif h == "entry":
        methods = ["", *(_indent(deco, 4)), "    def sample(self):", *_indent(body, 8)]
        start_list = methods
    elif h == "repr":
        methods = ["", *(_indent(deco, 4)), "    def extra_repr(self):", *_indent(body, 8), "        return ''"]
        start_list = methods
    elif h == "prehook":
        init.append("        self.register_forward_pre_hook(self._pre)")
        methods = ["", *(_indent(deco, 4)), "    def _pre(self, module, args):", *_indent(body, 8)]
        start_list = methods
    elif h == "function":
        outside = ["", "", *deco, f"def tweak(model{s.ann}):", *_indent(body, 4), "", "",
                   "def main():", "    model = Net()", "    tweak(model)"]
        start_list = outside
    elif h == "trainer_attr":
        outside = ["", "", "class Trainer:", f"    def __init__(self, model{s.ann}):", "        self.model = model",
                   "", *(_indent(deco, 4)), "    def step(self):", *_indent(body, 8)]
        start_list = outside
    elif h == "trainer_arg":
        outside = ["", "", "class Agent:", *(_indent(deco, 4)), f"    def update(self, model{s.ann}):", *_indent(body, 8)]
        start_list = outside
    elif h == "hook_arg":
        outside = ["", "", "class Hook:", *(_indent(deco, 4)), "    def after_train_iter(self, runner, batch_idx):",
                   *_indent(body, 8)]
        start_list = outside
    elif h == "hook_attr":
        outside = ["", "", "class Callback:", "    def set_trainer(self, trainer):", "        self.trainer = trainer",
                   "", *(_indent(deco, 4)), "    def on_epoch_end(self, epoch, logs=None):", *_indent(body, 8)]
        start_list = outside
    elif h == "collection":
        outside = ["", "", *deco, "def visit_objects(objs):", "    for name, obj in objs.items():",
                   f"        if isinstance(obj, {s.mod}):", *_indent(body, 12)]
        start_list = outside
    elif h == "by_hand_fn":
        outside = ["", "", *deco, f"def run_by_hand(layer{s.ann}, x):", *_indent(body, 4), "    return y"]
        start_list = outside
    elif h == "by_hand_method":
        outside = ["", "", "class Fuser:", *(_indent(deco, 4)), f"    def run(self, layer{s.ann}, x: torch.Tensor):",
                   *_indent(body, 8), "        return y"]
        start_list = outside
    elif h in WRAPPER_HOLDERS:
        prop = ["    @property"] if h == "wrapper_property" else []
        use = "self.masked" if h == "wrapper_property" else "self.masked()"
        outside = ["", "", f"class Wrapper({s.module_base}):", "    def __init__(self, layer):", "        super().__init__()",
                   "        self.wrapped = layer", "        self.register_buffer('mask', torch.ones(4096, 4096))", "",
                   *prop, *(_indent(deco, 4)), "    def masked(self):", *_indent(body, 8), "", "",
                   "class Masked(Wrapper):", "    def forward(self, x):", f"        y = {use}", "        return self.wrapped(x)"]
        start_list = outside
        body = [f"y = {use}"]  # the key line: where forward uses the helper
    else:
        raise ValueError(h)
    lines = head + init + fwd + fwd_tail + methods + ["", ""] + _helpers(s) + outside
    # locate the key line: the access lines as placed (the first occurrence in start_list's position)
    offset = {id(init): len(head), id(fwd): len(head) + len(init),
              id(methods): len(head) + len(init) + len(fwd) + len(fwd_tail),
              id(outside): len(lines) - len(outside)}[id(start_list)]
    key_text = body[a.key if h != "lambda" and h not in WRAPPER_HOLDERS else 0].strip()
    idx = next(i for i, ln in enumerate(start_list) if ln.strip() == key_text)
    cell.key_line = offset + idx + 1
    if a.callback:
        at = lines.index(next(ln for ln in lines if ln.startswith(f"def {a.callback}(")))
        cell.alt_line = at + 3  # `def`, `if isinstance`, the write
    cell.text = "\n".join(lines) + "\n"
    cell.expect = cell.access.expect(h)


def cells(spellings: list[Spelling]) -> list[Cell]:
    out = []
    for a in ACCESSES:
        for h in a.holders:
            if h not in EVERY_HOLDER:
                continue
            if h == "lambda" and not a.expression:
                continue
            for s in spellings:
                c = Cell(a, h, s)
                build(c)
                if c.expect is not None:
                    out.append(c)
    return out


def run_zgen(cells_: list[Cell], root: Path, zgen: str) -> None:
    files = {}
    for i, c in enumerate(cells_):
        p = root / f"c{i:05d}_{c.access.name}__{c.holder}__{c.spelling.name}.py"
        p.write_text(c.text)
        files[str(p)] = c
    proc = subprocess.run([zgen, "check", "--output-format", "json", "--exit-zero", "--no-cache", str(root)],
                          cwd=root, capture_output=True, text=True, check=False)
    if proc.returncode not in (0, 1) or not proc.stdout.strip():
        raise SystemExit(f"zgen failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
    for f in json.loads(proc.stdout):
        code = f["code"] or ""
        if not code.startswith(("ZG1", "ZG3")):
            continue
        path = str((root / f["filename"]).resolve()) if not os.path.isabs(f["filename"]) else f["filename"]
        c = files.get(path)
        if c is None:
            continue
        end = (f.get("end_location") or f["location"])["row"]
        c.found.append({"code": code, "row": f["location"]["row"], "end": end})


def _rate(ok: int, n: int) -> str:
    return f"{ok}/{n} ({ok / n:.2f})" if n else "-"


def report(cs: list[Cell], show: int) -> None:
    hz = [c for c in cs if c.expect == HAZARD]
    sf = [c for c in cs if c.expect == SAFE]
    print(f"cells: {len(cs)} ({len(hz)} hazard, {len(sf)} safe)")
    print(f"recall: {_rate(sum(c.ok for c in hz), len(hz))}   clean: {_rate(sum(c.ok for c in sf), len(sf))}")
    for fam in ("ZG1", "ZG3"):
        h = [c for c in hz if c.access.family == fam]
        print(f"  {fam} recall {_rate(sum(c.ok for c in h), len(h))}")
    for axis, key in (("access", lambda c: c.access.name), ("holder", lambda c: c.holder),
                      ("spelling", lambda c: c.spelling.name)):
        print(f"\n{axis:24s} {'recall':>16s} {'clean':>16s}")
        groups: dict[str, list[Cell]] = defaultdict(list)
        for c in cs:
            groups[key(c)].append(c)
        for name, g in groups.items():
            h = [c for c in g if c.expect == HAZARD]
            s = [c for c in g if c.expect == SAFE]
            print(f"{name:24s} {_rate(sum(c.ok for c in h), len(h)):>16s} {_rate(sum(c.ok for c in s), len(s)):>16s}")
    fails = [c for c in cs if not c.ok]
    if show and fails:
        print(f"\nfailing cells ({len(fails)}; first {show}):")
        for c in fails[:show]:
            said = ", ".join(f"{f['code']}@{f['row']}" for f in c.found) or "nothing"
            print(f"  {c.expect:6s} {c.access.name:24s} {c.holder:14s} {c.spelling.name:16s} line {c.key_line}: {said}")


_SHORT = {"init": "init", "init_helper": "init_h", "forward": "fwd", "forward_helper": "fwd_h", "nested": "nest",
          "entry": "entry", "repr": "repr", "prehook": "hook", "function": "func", "trainer_attr": "tr_at",
          "trainer_arg": "tr_ar", "lambda": "lam", "hook_arg": "hk_ar", "hook_attr": "hk_at", "collection": "coll",
          "by_hand_fn": "hand_f", "by_hand_method": "hand_m", "wrapper_method": "wrap_m", "wrapper_property": "wrap_p"}


def grid(cs: list[Cell]) -> None:
    """Access x holder as a markdown table over every spelling: passed (s: safe cell), failed, or passed/total."""
    groups: dict[tuple[str, str], list[Cell]] = defaultdict(list)
    for c in cs:
        groups[c.access.name, c.holder].append(c)
    names = list(dict.fromkeys(c.access.name for c in cs))
    print("\n| access \\ holder | " + " | ".join(_SHORT[h] for h in EVERY_HOLDER) + " |")
    print("|---" * (len(EVERY_HOLDER) + 1) + "|")
    for a in names:
        row = []
        for h in EVERY_HOLDER:
            g = groups.get((a, h))
            if not g:
                row.append("")
                continue
            ok = sum(c.ok for c in g)
            mark = "s" if g[0].expect == SAFE else ""
            row.append(("ok" if ok == len(g) else "**x**" if ok == 0 else f"{ok}/{len(g)}") + mark)
        print(f"| {a} | " + " | ".join(row) + " |")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--zgen", default=shutil.which("zgen") or "zgen", help="the zgen CLI (default: on PATH)")
    p.add_argument("--spellings", nargs="*", help="only these spellings")
    p.add_argument("--show-fails", type=int, default=0, metavar="N", help="print the first N failing cells")
    p.add_argument("--keep", type=Path, help="write the cells here and keep them")
    p.add_argument("--grid", action="store_true", help="also print access x holder as a markdown table")
    p.add_argument("--json", type=Path, help="write every cell's outcome here")
    args = p.parse_args(argv)
    sp = [s for s in SPELLINGS if not args.spellings or s.name in args.spellings]
    cs = cells(sp)
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        run_zgen(cs, args.keep.resolve(), args.zgen)
    else:
        with tempfile.TemporaryDirectory(prefix="zg1-matrix-") as d:
            run_zgen(cs, Path(d).resolve(), args.zgen)
    report(cs, args.show_fails)
    if args.grid:
        grid(cs)
    if args.json:
        args.json.write_text(json.dumps([{"access": c.access.name, "holder": c.holder, "spelling": c.spelling.name,
                                          "expect": c.expect, "ok": c.ok, "line": c.key_line, "found": c.found}
                                         for c in cs], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
