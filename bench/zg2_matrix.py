"""A combinatorial matrix of ZG2 divergence hazards (and their safe look-alikes); prints recall per axis value.

    python bench/zg2_matrix.py                 # the tables, then the failing cells
    python bench/zg2_matrix.py --keep /tmp/m   # also keep the generated files there
    python bench/zg2_matrix.py --zgen "python -m zgen"   # another checker command

Each generated file is one small model library: a `Sub` layer, a `Net` holding
`Sub`s (alone, in a ModuleList and a ModuleDict), and one piece of code that runs
a submodule under a decision. The decision and the call are the product of
independent axes:

* **condition**, what differs between ranks (rank, random draw, data value,
  optional input, key of an input mapping, batch size, data-dependent loop);
* **runner**, what runs under it (`m.sub(h)`, `m.sub.forward(h)`, a method of the
  model running submodules, a ModuleList / ModuleDict item, `getattr`, the whole
  model or its `predict` method when the code holds the model, a bound-method
  callback, a free loss helper given the model);
* **where**, the code holding the decision (`forward`, a method forward calls, a
  closure in forward, a module-level function given the model, a trainer class
  that is not a module holding a model passed in, an agent class building its
  policy);
* **spelling** (with `forward` and `m.sub(h)`): import styles, a base class of the
  file, decorators, argument annotations.

The safe side crosses decisions that are the same on every rank or gate no
submodule (configuration flags, `self.training`, static sizes, fixed loops,
optional inputs or random draws that gate only arithmetic, a random choice with
the same submodules on both branches, rank-0 logging) with the same runners and
places; a safe file is clean when `zgen check` reports no ZG2 finding in it.

A hazard file is *found* when a ZG2xx finding's rows overlap the condition's line
±1 or a gated call's line (markers `# COND` / `# CALL` in the generated code):
ZG201/202/203/205 report on the test of the `if`, ZG204 on the `while` test or on
the test before a `break`; a finding on the call itself is accepted too.

`zgen check` runs as users run it: the installed CLI (`python -m zgen check
--output-format json --exit-zero --no-cache`) over all the files of the matrix in
one process.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

# ----------------------------------------------------------------------------- runners


@dataclass(frozen=True)
class Runner:
    name: str
    expr: str  # `{m}` the model, `{a}` the argument, `{k}` a ModuleDict key
    setup: str = ""  # a line before the decision
    whole: bool = False  # needs the model to be an object other than `self`


RUNNERS = [
    Runner("sub", "{m}.sub({a})"),
    Runner("sub.forward", "{m}.sub.forward({a})"),
    Runner("method", "{m}.run_sub({a})"),
    Runner("list[i]", "{m}.layers[1]({a})"),
    Runner("dict[k]", "{m}.blocks[{k}]({a})"),
    Runner("getattr", "getattr({m}, 'sub')({a})"),
    Runner("callback", "fn({a})", setup="fn = {m}.sub.forward"),
    Runner("loss helper", "sub_loss({m}, {a})"),
    # a model chosen between two it holds, one possibly None (an EMA copy or the model): h-zg2flow
    Runner("a or b", "run({a})", setup="run = {m}.ema or {m}.sub"),
    Runner("default(a, b)", "run({a})", setup="run = default({m}.ema, {m}.sub)"),
    Runner("model()", "{m}({a})", whole=True),
    Runner("predict", "{m}.predict({a})", whole=True),
]

# ----------------------------------------------------------------------------- conditions
# A condition is a block of lines at indentation 0 using `h` (the running tensor), the optional inputs `ctx`,
# `mask`, `batch`, `{s}` (the object holding configuration and the rank) and `RUN(arg)` / `RUN(arg, key)`.


@dataclass(frozen=True)
class Condition:
    group: str
    name: str
    block: str


HAZARDS = [
    Condition("rank", "dist.get_rank()", "if dist.get_rank() == 0:  # COND\n    h = RUN(h)  # CALL"),
    Condition("rank", "self.rank", "if {s}.rank == 0:  # COND\n    h = RUN(h)  # CALL"),
    Condition(
        "rank", "LOCAL_RANK env",
        'local_rank = int(os.environ.get("LOCAL_RANK", "0"))\nif local_rank == 0:  # COND\n    h = RUN(h)  # CALL',
    ),
    Condition("random", "random.random()", "if random.random() < 0.5:  # COND\n    h = RUN(h)  # CALL"),
    Condition("random", "torch.rand(())", "if torch.rand(()) < 0.5:  # COND\n    h = RUN(h)  # CALL"),
    Condition("random", "torch.rand(1).item()", "if torch.rand(1).item() < 0.5:  # COND\n    h = RUN(h)  # CALL"),
    Condition("random", "np.random.rand()", "if np.random.rand() < 0.5:  # COND\n    h = RUN(h)  # CALL"),
    Condition(
        "random", "prob_mask_like().any()",
        "keep = prob_mask_like((h.shape[0],), 0.5, h.device)\nif keep.any():  # COND\n    h = RUN(h)  # CALL",
    ),
    Condition("data", "x.sum() > 0", "if h.sum() > 0:  # COND\n    h = RUN(h)  # CALL"),
    Condition("data", "(x > t).any()", "if (h > 0.5).any():  # COND\n    h = RUN(h)  # CALL"),
    Condition("data", ".item() compare", "if h.mean().item() > 0:  # COND\n    h = RUN(h)  # CALL"),
    Condition("data", "torch.any(mask)", "if torch.any(mask):  # COND\n    h = RUN(h)  # CALL"),
    Condition("optional", "x is not None", "if ctx is not None:  # COND\n    h = h + RUN(ctx)  # CALL"),
    Condition("optional", "x is None", "if ctx is None:  # COND\n    ctx = RUN(h)  # CALL\nh = h + ctx"),
    Condition("optional", "exists(x)", "if exists(ctx):  # COND\n    h = h + RUN(ctx)  # CALL"),
    Condition("optional", "default(x, ...)", "ctx = default(ctx, lambda: RUN(h))  # COND CALL\nh = h + ctx"),
    Condition("optional", "if x:", "if ctx:  # COND\n    h = h + RUN(ctx)  # CALL"),
    Condition("optional", "if not x", "if not ctx:  # COND\n    ctx = RUN(h)  # CALL\nh = h + ctx"),
    Condition("optional", "mask is None", "if mask is None:  # COND\n    mask = RUN(h)  # CALL\nh = h * mask"),
    Condition("key", "'k' in batch", 'if "ctx" in batch:  # COND\n    h = h + RUN(batch["ctx"])  # CALL'),
    Condition(
        "key", "batch.get(k) is not None", 'if batch.get("ctx") is not None:  # COND\n    h = h + RUN(batch["ctx"])  # CALL'
    ),
    Condition("key", "batch.items() -> [key]", "for key, value in batch.items():  # COND\n    h = h + RUN(value, key)  # CALL"),
    Condition("batch size", "x.shape[0] > 1", "if h.shape[0] > 1:  # COND\n    h = RUN(h)  # CALL"),
    Condition("batch size", "len(x) == 1", "if len(h) == 1:  # COND\n    h = RUN(h)  # CALL"),
    Condition("batch size", "x.size(0) > 1", "if h.size(0) > 1:  # COND\n    h = RUN(h)  # CALL"),
    Condition("loop", "while on output", "while h.norm() > 1:  # COND\n    h = RUN(h)  # CALL"),
    Condition(
        "loop", "range(int(n.item()))", "n = h.abs().sum()\nfor _ in range(int(n.item())):  # COND\n    h = RUN(h)  # CALL"
    ),
    Condition(
        "loop", "break on statistic",
        "for _ in range(8):\n    h = RUN(h)  # CALL\n    if h.abs().max() < 1e-3:  # COND\n        break",
    ),
    Condition(
        "loop", "stop on EOS",
        "tokens = []\nfor _ in range(8):\n    logits = RUN(h)  # CALL\n    token = logits.argmax(-1)\n"
        "    tokens.append(token)\n    if (token == 0).all():  # COND\n        break",
    ),
    # A count of this rank's data walked through a progress bar or a pass-through wrapper.
    Condition("loop", "tqdm over a data count", "n = h.shape[0]\nfor _ in tqdm(range(n)):  # COND\n    h = RUN(h)  # CALL"),
    Condition(
        "loop", "local pass-through wrapper",
        "wrap = tqdm if {s}.training else (lambda t: t)\nfor _ in wrap(range(h.shape[-1] // 4)):  # COND\n    h = RUN(h)  # CALL",
    ),
    Condition("loop", "trange over a length", "for _ in trange(len(h)):  # COND\n    h = RUN(h)  # CALL"),
    # A flag another class sets on the object running the loop, on this rank's own metric.
    Condition(
        "flag", "patience callback, break",
        "stopper = EarlyStop()\nfor _ in range(8):\n    h = RUN(h)  # CALL\n    stopper.update({s}, h.mean().item())\n"
        "    if {s}.should_stop:  # COND\n        break",
    ),
    Condition(
        "flag", "NaN guard, while not",
        "guard = NanGuard()\nwhile not {s}.diverged:  # COND\n    h = RUN(h)  # CALL\n    guard.update({s}, h.sum().item())",
    ),
    # This host's clock: a time limit, a time budget.
    Condition(
        "clock", "time limit break",
        "start = time.time()\nfor _ in range(8):\n    h = RUN(h)  # CALL\n    if time.time() - start > 60:  # COND\n        break",
    ),
    Condition(
        "clock", "while under a time budget",
        "deadline = time.perf_counter() + 5.0\nwhile time.perf_counter() < deadline:  # COND\n    h = RUN(h)  # CALL",
    ),
    Condition(
        "clock", "elapsed local, return",
        "t0 = time.monotonic()\nfor _ in range(8):\n    elapsed = time.monotonic() - t0\n"
        "    if elapsed > 1.0:  # COND\n        return h\n    h = RUN(h)  # CALL",
    ),
    # A module picked out of a container by a key that differs per rank (the block runs it; no `RUN`).
    Condition(
        "rank", "rank slice bound to a local",
        "rank = dist.get_rank()\nchosen = {m}.layers[rank:rank + 1]  # COND\nfor layer in chosen:\n    h = layer(h)  # CALL",
    ),
    Condition(
        "rank", "rank through a table of offsets",
        "offsets = [0, 1]\nfirst = offsets[dist.get_rank() % 2]\nlayer = {m}.layers[first]  # COND\nh = layer(h)  # CALL",
    ),
    # Issue 20 (h-zg2flow): rank tests behind a property, a flag set from one and a function of the file; a single
    # layer run on an optional input; a random subset of a module list; loops stopped on a kept statistic, or counted
    # by split sizes the input decides; a retry on an out-of-memory error.
    Condition("rank", "rank property", "if {s}.is_main:  # COND\n    h = RUN(h)  # CALL"),
    Condition("rank", "flag set from a rank property", "if {s}.evaluates:  # COND\n    h = RUN(h)  # CALL"),
    Condition("rank", "rank function of the file", "if on_first_host():  # COND\n    h = RUN(h)  # CALL"),
    Condition("optional", "single layer on the input", "if exists(ctx):  # COND\n    h = h + {m}.proj(ctx)  # CALL"),
    Condition("optional", "single layer, key present", 'if "ctx" in batch:  # COND\n    h = h + {m}.proj(batch["ctx"])  # CALL'),
    Condition(
        "random", "random.sample of a module list",
        "for layer in random.sample(list({m}.layers), 1):  # COND\n    h = layer(h)  # CALL",
    ),
    Condition(
        "random", "randperm indices into a module list",
        "order = torch.randperm(len({m}.layers))\nfor j in range(1):\n    h = {m}.layers[order[j]](h)  # COND CALL",
    ),
    Condition(
        "loop", "early stop on a kept loss statistic",
        "prev = 0.0\nlosses = [0.0] * 2\nfor _ in range(8):\n    for i in range(2):\n        losses[i] = float(RUN(h).mean())  # CALL\n"
        "    new = float(np.mean(losses))\n    if abs(prev - new) < 1e-3:  # COND\n        break\n    prev = new",
    ),
    Condition(
        "loop", "split sizes the input decides",
        "sizes = (torch.arange(h.shape[-1]) % 3 == 0).nonzero().flatten().diff().tolist()\n"
        "for part in h.split(sizes, dim=-1):  # COND\n    h = RUN(part)  # CALL",
    ),
    Condition(
        "retry", "retry on out of memory",
        "while True:  # COND\n    try:\n        h = RUN(h)  # CALL\n        break\n    except torch.cuda.OutOfMemoryError:  # COND\n"
        "        h = h[: h.shape[0] // 2]",
    ),
    Condition("random", "random key into a ModuleDict", 'h = {m}.blocks[random.choice(["a", "ctx"])](h)  # COND CALL'),
    Condition(
        "data", "argmax of the layers' scores",
        "scores = torch.stack([layer(h).mean() for layer in {m}.layers])\nbest = int(torch.argmax(scores))\n"
        "picked = {m}.layers[best]  # COND\nh = picked(h)  # CALL",
    ),
    Condition(
        "data", "topk indices walked",
        "for i in h.mean(0).topk(1).indices.tolist():\n    h = {m}.layers[i](h)  # COND CALL",
    ),
]

SAFE = [
    Condition("config", "self.use_x", "if {s}.use_ctx:\n    h = RUN(h)"),
    Condition("config", "self.config.k", "if {s}.config.use_extra:\n    h = RUN(h)"),
    Condition("config", "self.training", "if {s}.training:\n    h = RUN(h)"),
    Condition("static", "self.dim > 1", "if {s}.dim > 1:\n    h = RUN(h)"),
    Condition("loop", "range(self.depth)", "for _ in range({s}.depth):\n    h = RUN(h)"),
    Condition("loop", "over ModuleList", "for layer in {m}.layers:\n    h = layer(h)"),
    Condition("optional", "gates arithmetic", "if ctx is not None:\n    h = h + ctx\nh = RUN(h)"),
    Condition("random", "gates arithmetic", "if torch.rand(()) < 0.5:\n    h = h * 0.5\nh = RUN(h)"),
    Condition("random", "dropout mask", "keep = (torch.rand(h.shape[0], 1) > 0.1).float()\nh = RUN(h) * keep"),
    Condition("random", "same both ways", "if random.random() < 0.5:\n    h = RUN(h)\nelse:\n    h = RUN(h * 2)"),
    Condition("rank", "logging only", "h = RUN(h)\nif dist.get_rank() == 0:\n    print(h.mean().item())"),
    Condition("rank", "saving only", 'h = RUN(h)\nif {s}.rank == 0:\n    torch.save(h.detach(), "h.pt")'),
    Condition("loop", "tqdm over a configured count", "for _ in tqdm(range({s}.depth), desc='steps'):\n    h = RUN(h)"),
    # Look-alikes of a stop flag: set on the epoch counter, or on a metric all-reduced first.
    Condition(
        "flag", "set on the epoch counter",
        "limit = EpochLimit()\nfor epoch in range(8):\n    h = RUN(h)\n    limit.update({s}, epoch)\n    if {s}.halted:\n        break",
    ),
    Condition(
        "flag", "set on an all-reduced metric",
        "stop = ReducedStop()\nfor _ in range(8):\n    h = RUN(h)\n    stop.update({s}, h.mean().item())\n    if {s}.done:\n        break",
    ),
    # Look-alikes of a clock: reduced across ranks before the test, or gating only logging.
    Condition(
        "clock", "time limit all-reduced",
        "start = time.time()\nfor _ in range(8):\n    h = RUN(h)\n    elapsed = torch.tensor(time.time() - start)\n"
        "    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)\n    if elapsed.item() > 60:\n        break",
    ),
    Condition("clock", "clock only logged", "start = time.time()\nh = RUN(h)\nif time.time() - start > 1:\n    print(\"slow\")"),
    # Look-alikes of a picked module: the rank picks data, a configured key, every index, a picked module only moved.
    Condition(
        "rank", "rank picks the data share",
        "piece = h.chunk(2)[dist.get_rank() % 2]\nfor layer in {m}.layers:\n    piece = layer(piece)\nh = piece",
    ),
    Condition("config", "configured key", "layer = {m}.layers[{s}.depth - 1]\nh = layer(h)"),
    Condition("loop", "every index", "for i in range(len({m}.layers)):\n    h = {m}.layers[i](h)"),
    # Look-alikes (h-zg2flow): a property and a function of the file answering a setting, a default filled before
    # the single layer runs, a key of a mapping built here, random indices into the data, a statistic all-reduced
    # before the stop, split sizes from the configuration, a retry that runs no submodule.
    Condition("config", "config property", "if {s}.uses_extra:\n    h = RUN(h)"),
    Condition("config", "config function of the file", "if wants_extra({s}.config):\n    h = RUN(h)"),
    Condition("optional", "single layer, default filled", "if ctx is None:\n    ctx = h\nh = h + {m}.proj(ctx)"),
    Condition("optional", "key of a mapping built here", 'feats = {{"ctx": h}}\nif "ctx" in feats:\n    h = RUN(feats["ctx"])'),
    Condition("random", "random rows of the data", "rows = random.sample(range(h.shape[0]), 1)\nh = RUN(h[rows])"),
    Condition(
        "loop", "early stop on an all-reduced statistic",
        "prev = 0.0\nfor _ in range(8):\n    loss = RUN(h).mean()\n    dist.all_reduce(loss)\n    new = float(loss)\n"
        "    if abs(prev - new) < 1e-3:\n        break\n    prev = new",
    ),
    Condition("loop", "split sizes of the configuration", "for part in h.split([{s}.dim // 2] * 2, dim=-1):\n    h = RUN(part)"),
    Condition(
        "retry", "retry that runs no submodule",
        "while True:\n    try:\n        h = h.clone()\n        break\n    except RuntimeError:\n        h = h.float()\nh = RUN(h)",
    ),
    Condition("rank", "picked by rank, only moved", 'keep = {m}.layers[dist.get_rank() % 2]\nkeep.to("cpu")\nh = RUN(h)'),
]

# ----------------------------------------------------------------------------- spellings and places

_SPELLINGS = {
    "import torch.nn as nn": ("import torch.nn as nn", "nn.Module", "nn.ModuleList", "nn.ModuleDict", "nn.Linear"),
    "from torch import nn": ("from torch import nn", "nn.Module", "nn.ModuleList", "nn.ModuleDict", "nn.Linear"),
    "from torch.nn import bare": (
        "from torch.nn import Linear, Module, ModuleDict, ModuleList", "Module", "ModuleList", "ModuleDict", "Linear"
    ),
}
SPELLINGS = [
    "import torch.nn as nn", "from torch import nn", "from torch.nn import bare", "base class in file",
    "@torch.no_grad()", "custom decorator", "@beartype", "annotations X | None", "string annotations",
]  # fmt: skip

PLACES = ["forward", "method", "closure", "function", "trainer", "agent"]

_HEADER = '''"""Generated by bench/zg2_matrix.py."""

import os
import random
import time

import numpy as np
import torch
import torch.distributed as dist
{nn_import}
from torch import Tensor
from typing import Optional
from tqdm import tqdm, trange
{extra_import}

def exists(val):
    return val is not None


def default(val, d):
    if exists(val):
        return val
    return d() if callable(d) else d


def prob_mask_like(shape, prob, device):
    return torch.zeros(shape, device=device).float().uniform_(0, 1) < prob


def on_first_host():
    return int(os.environ.get("RANK", "0")) == 0


def wants_extra(config):
    return config.use_extra


def sub_loss(model, h):
    return model.sub(h).pow(2).mean()


class EarlyStop:
    """Sets a stop flag on the object it is handed when this rank's metric gets worse."""

    def __init__(self, patience=2):
        self.best, self.wait, self.patience = float("inf"), 0, patience

    def update(self, owner, metric):
        if metric < self.best:
            self.best, self.wait = metric, 0
        else:
            self.wait += 1
            if self.wait > self.patience:
                owner.should_stop = True


class NanGuard:
    def update(self, owner, metric):
        if metric != metric:
            owner.diverged = True


class EpochLimit:
    def update(self, owner, epoch):
        if epoch >= 4:
            owner.halted = True


class ReducedStop:
    def update(self, owner, metric):
        value = torch.tensor(metric)
        dist.all_reduce(value)
        if value.item() < 1e-3:
            owner.done = True

{decorator_def}
{base_def}class Sub({base}):
    def __init__(self, dim=8):
        super().__init__()
        self.lin = {linear}(dim, dim)

    def forward(self, x):
        return self.lin(x)


class Config:
    use_extra = False


class Net({base}):
    def __init__(self, dim=8, depth=2, use_ctx=False, config=None):
        super().__init__()
        self.dim = dim
        self.depth = depth
        self.use_ctx = use_ctx
        self.config = config or Config()
        self.rank = dist.get_rank() if dist.is_initialized() else 0
        self.evaluates = self.is_main or use_ctx
        self.sub = Sub(dim)
        self.proj = {linear}(dim, dim)
        self.ema = None
        self.layers = {module_list}([Sub(dim) for _ in range(depth)])
        self.blocks = {module_dict}({{"a": Sub(dim), "ctx": Sub(dim)}})

    @property
    def is_main(self):
        return dist.get_rank() == 0

    @property
    def uses_extra(self):
        return self.use_ctx

    def run_sub(self, h):
        return self.layers[0](self.sub(h))

    def predict(self, h):
        return self.sub(h).softmax(-1)
'''

_HOLDER_INIT = """
    def __init__(self, {arg}dim=8, depth=2, use_ctx=False, config=None):
        {hold}
        self.dim = dim
        self.depth = depth
        self.use_ctx = use_ctx
        self.training = True
        self.config = config or Config()
        self.rank = dist.get_rank() if dist.is_initialized() else 0
        self.evaluates = self.is_main or use_ctx

    @property
    def is_main(self):
        return dist.get_rank() == 0

    @property
    def uses_extra(self):
        return self.use_ctx
"""


def _indent(block: str, n: int) -> str:
    return "\n".join((" " * n + line) if line else line for line in block.splitlines())


def _body(cond: Condition, runner: Runner, m: str, s: str) -> str:
    """The decision block with `RUN` replaced by the runner on model object `m`, configuration object `s`."""
    block = cond.block.replace("{s}", s).replace("{m}", m)
    out = []
    if runner.setup:
        out.append(runner.setup.format(m=m))
    out.append("h = x")
    for line in block.splitlines():
        while "RUN(" in line:
            start = line.index("RUN(")
            depth, i = 0, start + 3
            for i in range(start + 3, len(line)):
                depth += line[i] == "("
                depth -= line[i] == ")"
                if depth == 0:
                    break
            args = [a.strip() for a in line[start + 4 : i].split(",")]
            key = args[1] if len(args) > 1 else '"a"'
            line = line[:start] + runner.expr.format(m=m, a=args[0], k=key) + line[i + 1 :]
        out.append(line)
    return "\n".join(out)


def generate(cond: Condition, runner: Runner, place: str, spelling: str = "import torch.nn as nn") -> str | None:
    """One file, or None when the combination does not exist (a whole-model runner inside the model itself)."""
    inside = place in ("forward", "method", "closure")
    if runner.whole and inside:
        return None
    nn_import, module, module_list, module_dict, linear = _SPELLINGS.get(spelling, _SPELLINGS["import torch.nn as nn"])
    base, base_def, extra_import, decorator_def, decorator = module, "", "", "", ""
    if spelling == "base class in file":
        base, base_def = "Base", f"class Base({module}):\n    pass\n\n\n"
    if spelling == "@torch.no_grad()":
        decorator = "@torch.no_grad()"
    elif spelling == "custom decorator":
        decorator_def = "\ndef logged(fn):\n    def wrapper(*args, **kwargs):\n        return fn(*args, **kwargs)\n\n    return wrapper\n\n"
        decorator = "@logged"
    elif spelling == "@beartype":
        extra_import, decorator = "from beartype import beartype", "@beartype"
    args = "x, ctx=None, batch=None, mask=None"
    if spelling == "annotations X | None":
        args = "x: Tensor, ctx: Tensor | None = None, batch: dict | None = None, mask: Tensor | None = None"
    elif spelling == "string annotations":
        args = 'x: "Tensor", ctx: "Optional[Tensor]" = None, batch: "Optional[dict]" = None, mask: "Optional[Tensor]" = None'
    text = _HEADER.format(
        nn_import=nn_import, extra_import=extra_import, decorator_def=decorator_def,
        base_def=base_def, base=base, linear=linear,
        module_list=module_list, module_dict=module_dict,
    )  # fmt: skip
    deco = f"    {decorator}\n" if decorator else ""
    call_args = "x, ctx, batch, mask"
    if place == "forward":
        text += f"\n{deco}    def forward(self, {args}):\n{_indent(_body(cond, runner, 'self', 'self'), 8)}\n        return h\n"
    elif place == "method":
        text += f"\n    def forward(self, {args}):\n        return self.branch({call_args})\n"
        text += f"\n{deco}    def branch(self, {args}):\n{_indent(_body(cond, runner, 'self', 'self'), 8)}\n        return h\n"
    elif place == "closure":
        text += f"\n{deco}    def forward(self, {args}):\n        def inner(x):\n"
        text += f"{_indent(_body(cond, runner, 'self', 'self'), 12)}\n            return h\n\n        return inner(x)\n"
    elif place == "function":
        text += f"\n    def forward(self, {args}):\n        return self.sub(x)\n"
        text += f"\n\n{decorator}{chr(10) if decorator else ''}def step(model, {args}):\n"
        text += f"{_indent(_body(cond, runner, 'model', 'model'), 4)}\n    return h\n"
    elif place in ("trainer", "agent"):
        text += f"\n    def forward(self, {args}):\n        return self.sub(x)\n"
        cls, method, attr = ("Trainer", "train_step", "model") if place == "trainer" else ("Agent", "act", "policy")
        hold = "self.model = model" if place == "trainer" else "self.policy = Net(dim, depth)"
        text += f"\n\nclass {cls}:"
        text += _HOLDER_INIT.format(arg="model, " if place == "trainer" else "", hold=hold)
        text += f"\n{deco}    def {method}(self, {args}):\n{_indent(_body(cond, runner, 'self.' + attr, 'self'), 8)}\n"
        text += "        loss = h.float().mean()\n        loss.backward()\n        return loss\n"
    return text


def expected_lines(text: str) -> set[int]:
    """The rows a finding may overlap: the condition's ±1, the gated call's."""
    rows: set[int] = set()
    for number, line in enumerate(text.splitlines(), 1):
        if "# COND" in line:
            rows.update({number - 1, number, number + 1})
        if "CALL" in line.split("#")[-1]:
            rows.add(number)
    return rows


# ----------------------------------------------------------------------------- the run


@dataclass(frozen=True)
class Case:
    hazard: bool
    cond: Condition
    runner: str
    place: str
    spelling: str
    path: Path


def build(root: Path) -> list[Case]:
    cases: list[Case] = []

    def add(hazard: bool, cond: Condition, runner: Runner, place: str, spelling: str) -> None:
        text = generate(cond, runner, place, spelling)
        if text is None:
            return
        path = root / f"m{len(cases):05d}.py"
        path.write_text(text)
        cases.append(Case(hazard, cond, runner.name, place, spelling, path))

    default = RUNNERS[0]
    for hazard, conds in ((True, HAZARDS), (False, SAFE)):
        for cond in conds:
            for place in PLACES:
                for runner in RUNNERS:
                    if "RUN(" not in cond.block and runner is not default:
                        continue  # runs its own modules; the runner does not appear
                    add(hazard, cond, runner, place, "import torch.nn as nn")
            for spelling in SPELLINGS[1:]:
                add(hazard, cond, default, "forward", spelling)
    return cases


def run_zgen(zgen: list[str], files: list[Path], cwd: Path) -> dict[Path, list[dict]]:
    found: dict[Path, list[dict]] = defaultdict(list)
    for start in range(0, len(files), 400):
        chunk = files[start : start + 400]
        proc = subprocess.run(
            [*zgen, "check", "--output-format", "json", "--exit-zero", "--no-cache", *map(str, chunk)],
            capture_output=True, text=True, cwd=cwd,
        )  # fmt: skip
        if proc.returncode not in (0, 1) or not proc.stdout.strip():
            sys.exit(f"zgen exited {proc.returncode} with no JSON: {proc.stderr[-2000:]}")
        for item in json.loads(proc.stdout):
            found[Path(item["filename"]).resolve()].append(item)
    return found


def _hit(case: Case, findings: list[dict], rows: set[int]) -> bool:
    for f in findings:
        if not f["code"].startswith("ZG2"):
            continue
        if not case.hazard:
            return True
        start, end = f["location"]["row"], f["end_location"]["row"]
        if any(start <= r <= end for r in rows):
            return True
    return False


def _table(title: str, rows: list[str], cols: list[str], cell: dict, total: dict) -> str:
    out = [f"{title}", "", "| " + " | ".join(["condition", *cols, "all"]) + " |", "|" + "---|" * (len(cols) + 2)]
    for r in rows:
        cells = []
        for c in cols:
            ok, n = cell.get((r, c), (0, 0))
            cells.append(f"{ok}/{n}" if n else "-")
        ok, n = total[r]
        out.append(f"| {r} | " + " | ".join(cells) + f" | {ok}/{n} |")
    col_tot = []
    for c in cols:
        ok = sum(cell.get((r, c), (0, 0))[0] for r in rows)
        n = sum(cell.get((r, c), (0, 0))[1] for r in rows)
        col_tot.append(f"{ok}/{n}" if n else "-")
    ok, n = sum(total[r][0] for r in rows), sum(total[r][1] for r in rows)
    out.append("| **all** | " + " | ".join(col_tot) + f" | {ok}/{n} = {ok / max(n, 1):.2f} |")
    return "\n".join(out)


def report(cases: list[Case], results: dict[Case, bool], hazard: bool, by: str = "group") -> str:
    chosen = [c for c in cases if c.hazard is hazard]
    key = (lambda c: c.cond.group) if by == "group" else (lambda c: f"{c.cond.group}: {c.cond.name}")
    rows = list(dict.fromkeys(key(c) for c in chosen))
    parts = []
    axes = (
        ("runner (place forward..agent, default spelling)", lambda c: c.runner, [r.name for r in RUNNERS],
         lambda c: c.spelling == "import torch.nn as nn"),
        ("place (all runners, default spelling)", lambda c: c.place, PLACES,
         lambda c: c.spelling == "import torch.nn as nn"),
        ("spelling (forward, `self.sub(h)`)", lambda c: c.spelling, SPELLINGS,
         lambda c: c.place == "forward" and c.runner == "sub"),
    )  # fmt: skip
    what = "recall" if hazard else "clean"
    for title, col_of, cols, keep in axes:
        cell: dict = {}
        total: dict = {}
        for c in chosen:
            if not keep(c):
                continue
            good = results[c] if hazard else not results[c]
            r = key(c)
            ok, n = cell.get((r, col_of(c)), (0, 0))
            cell[(r, col_of(c))] = (ok + good, n + 1)
            ok, n = total.get(r, (0, 0))
            total[r] = (ok + good, n + 1)
        parts.append(_table(f"**{what} by condition x {title}**", [r for r in rows if r in total], cols, cell, total))
    return "\n\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zgen", default=f"{sys.executable} -m zgen", help="the checker command (default: this python)")
    parser.add_argument("--keep", type=Path, help="write the generated files here and keep them")
    parser.add_argument("--fine", action="store_true", help="one row per condition, not per condition group")
    parser.add_argument("--failures", type=int, default=60, help="how many failing cells to list")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        cases = build(root)
        found = run_zgen(shlex.split(args.zgen), [c.path for c in cases], root)
        results = {c: _hit(c, found.get(c.path.resolve(), []), expected_lines(c.path.read_text())) for c in cases}
    by = "name" if args.fine else "group"
    print(report(cases, results, True, by))
    print()
    print(report(cases, results, False, by))
    print_summary([c for c in cases if c.hazard], [c for c in cases if not c.hazard], results, args.failures,
                  lambda c: f"{c.cond.group}: {c.cond.name} | {c.runner} | {c.place} | {c.spelling}  ({c.path.name})")
    return 0


def print_summary(hazards: list, safe: list, results: dict, failures: int, describe) -> None:
    """The last lines every matrix prints: recall and clean rate, then the first `failures` missed and flagged
    cells, each as `describe(cell)` says (`results[cell]`: zgen reported the cell)."""
    n_found, n_clean = sum(results[c] for c in hazards), sum(not results[c] for c in safe)
    print(f"\nhazard recall {n_found}/{len(hazards)} = {n_found / len(hazards):.2f}; "
          f"safe clean {n_clean}/{len(safe)} = {n_clean / len(safe):.2f}")  # fmt: skip
    for title, failing in (("missed hazard", [c for c in hazards if not results[c]]),
                           ("flagged safe", [c for c in safe if results[c]])):
        print(f"\n{title} cells ({len(failing)}; first {failures}):")
        for c in failing[:failures]:
            print(f"  {describe(c)}")


if __name__ == "__main__":
    raise SystemExit(main())
