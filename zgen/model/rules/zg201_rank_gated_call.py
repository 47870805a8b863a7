"""ZG201: a submodule call or collective that only some ranks run."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..analysis.calls import ModuleCalls
from ..analysis.divergence import message
from ..analysis.flow import flat_of
from ..analysis.runs import HelperRuns
from ..analysis.script import divergences, method_reach, module_helper_reaches, script_divergences
from ..analysis.state import state_trigger
from ..analysis.taint import RANK, rank_decorator, rank_trigger
from ..program import known
from ..program.index import ModelIndex, memoised
from ..program.members import facts_of
from ..program.tree import code_of, cst
from ..program.trigger import Trigger
from .rule import Report, Rule

# Any spelling of the rank (`known.RANK_WORDS` and the shapes `known.is_rank_name` accepts) as a whole word, and the
# bare word a main-process test compares (`opt["rank"] == 0`, `taint._main_rank_test`).
# (each spelling is one word holding one of the literals: searched in their lines alone)
_TRIGGER = Trigger(*known.RANK_LITERALS, pattern=known.RANK_TEXT + r"|(?<!\w)rank(?!\w)", by_line=True)


class RankGatedCall(Rule):
    """A submodule call or collective runs only on some ranks.

    ## What it does
    Flags a call of a submodule that owns parameters (or of the wrapped
    model, or a `torch.distributed` collective, or a ZeRO-3 engine method
    such as `save_checkpoint`) that runs only when a test on the process
    rank holds: `if dist.get_rank() == 0:`, `if args.local_rank == 0:`,
    `if accelerator.is_main_process:`, or an early `return`/`continue` on such
    a test. Values computed from the rank count too (`rank = dist.get_rank()`),
    and so do the usual "am I the main process?" helpers (`is_master(args)`).
    A module (or a slice of modules) taken out of a container by the rank
    (`experts = self.experts[rank_slice]; for e in experts: e(x)`,
    `getattr(self, f"head_{rank}")`) runs only on some ranks too.
    A method decorated to run on the main process only (`@rank_zero_only`)
    that runs a submodule is flagged at the decorator. In a function handed
    a model (`def evaluate(model, ...)` that calls `model.eval()`), calls of
    that model count as well.

    ## Why is this bad under ZeRO-3?
    Each rank holds only a slice of every parameter. Running a submodule
    all-gathers its parameters, and an all-gather completes only when every
    rank joins it. A rank that skips the call never joins: the others wait
    until the collective timeout and the job dies without an error that
    points here. The same holds for collectives and for engine methods
    that gather or synchronise (`save_checkpoint`, `save_16bit_model`).

    Using the rank for arithmetic (offsets, seeds) or for logging is fine;
    only decisions about running modules or collectives are flagged.

    ## Example
    ```python
    def forward(self, x):
        if dist.get_rank() == 0:
            x = self.probe(x)  # other ranks never gather `probe`'s weights
        return self.head(x)
    ```

    ## Use instead
    ```python
    def forward(self, x):
        probed = self.probe(x)  # every rank runs it
        if dist.get_rank() == 0:
            log_stats(probed)   # only the side effect is rank-specific
        return self.head(x)
    ```
    """

    code = "ZG201"
    name = "rank-gated-call"

    VALID = (
        # The rank only offsets labels (arithmetic); every rank runs the head.
        """
import torch.distributed as dist
from torch import nn

class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x, n):
        labels = n * dist.get_rank() + torch.arange(n)
        return self.proj(x), labels
""",
        # Logging on rank 0 only.
        """
import torch.distributed as dist
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.Linear(4, 4)

    def forward(self, x):
        y = self.block(x)
        if dist.get_rank() == 0:
            print(y.mean())
        return y
""",
        # A low-rank adapter's `rank` is not the process rank.
        """
from torch import nn

class Lora(nn.Module):
    def __init__(self, rank):
        super().__init__()
        self.rank = rank
        self.down = nn.Linear(16, rank)

    def forward(self, x):
        if self.rank > 0:
            x = self.down(x)
        return x
""",
        # Script: only the side effect is on rank 0; the checkpoint is saved by all ranks.
        """
import deepspeed, torch.distributed as dist

def main(model, cfg):
    engine, _, _, _ = deepspeed.initialize(model=model, config=cfg)
    engine.save_checkpoint("ckpt")
    if dist.get_rank() == 0:
        print("saved")
""",
        # Script: every rank evaluates the model handed in; only the main process logs.
        """
def evaluate(model, loader, args):
    model.eval()
    losses = [model(batch) for batch in loader]
    if is_master(args):
        print(sum(losses))
    return losses
""",
        # A rank-0-only method that only logs what every rank computed.
        """
from pytorch_lightning.utilities import rank_zero_only
from torch import nn

class Module(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(512, 512)

    def forward(self, x):
        out = self.net(x)
        self.log_stats(out)
        return out

    @rank_zero_only
    def log_stats(self, out):
        print(out.mean())
""",
        # "Main process first": each rank reaches the barrier exactly once.
        """
import torch.distributed as dist
from contextlib import contextmanager

@contextmanager
def main_process_first(local_rank):
    if local_rank != 0:
        dist.barrier()
    yield
    if local_rank == 0:
        dist.barrier()
""",
        # Rank 0 and the others leave at the same test; the rank indexes this rank's shard.
        """
import torch.distributed as dist

def broadcast_state(state, shards, group=None):
    if dist.get_rank(group) == 0:
        if state.dim() == 0:
            return state
    else:
        if state.dim() == 0:
            return state
    for shard in range(len(shards[dist.get_rank(group)])):
        dist.broadcast(state, src=0, group=group)
    return state
""",
    )
    INVALID = (
        """
import torch.distributed as dist
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.Linear(4, 4)

    def forward(self, x):
        if dist.get_rank() == 0:
            x = self.block(x)
        return x
""",
        # The rank stored in __init__ and an early return.
        """
import os
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.local_rank = int(os.environ["LOCAL_RANK"])
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x):
        for layer in self.layers:
            if self.local_rank != 0:
                return x
            x = layer(x)
        return x
""",
        # Script: evaluation that only the main process runs, on a model handed in.
        """
def evaluate(model, loader, args):
    if not is_master(args):
        return {}
    model.eval()
    return [model(batch) for batch in loader]
""",
        # A method that a decorator runs on rank 0 only, which runs the model.
        """
from pytorch_lightning.utilities import rank_zero_only
from torch import nn

class Module(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(512, 512)

    def forward(self, x):
        return self.net(x)

    @rank_zero_only
    def log_samples(self, batch):
        samples = self.net(batch)
        print(samples.mean())
""",
        # A trainer that leaves on all but the main process before the accelerator gathers the state.
        """
class Trainer:
    def save(self, path):
        if not self.accelerator.is_main_process:
            return
        state = self.accelerator.get_state_dict(self.model)
        torch.save(state, path)
""",
        # Script: a ZeRO-3 checkpoint saved only by rank 0.
        """
import deepspeed

def main(args, model, cfg):
    engine, _, _, _ = deepspeed.initialize(model=model, config=cfg)
    if args.local_rank == 0:
        engine.save_checkpoint("ckpt")
""",
    )

    def check(self, index: ModelIndex) -> Iterator[Report]:
        class_hits: dict[str, bool] = {}
        trigger = rank_trigger(index, _TRIGGER)  # (also a call of a function of the file answering on the rank)
        for cls, method in index.methods("all"):
            if cls.name not in class_hits:  # `self.rank = dist.get_rank()` in __init__ taints every method
                class_hits[cls.name] = bool(trigger.search(cls.text))
            if not (class_hits[cls.name] or trigger.search(method.text)):
                continue
            for d in divergences(index, cls, method):
                if d.kind == RANK:
                    yield self.finding(index, method.snippet, d.node, message(d, code_of(d.node)), _HELP, d.site)
        for snippet, d in script_divergences(index, state_trigger(index, trigger)):
            yield self.finding(index, snippet, d.node, message(d, code_of(d.node)), _HELP, d.site)
        yield from self._rank_zero_functions(index)

    def _rank_zero_functions(self, index: ModelIndex) -> Iterator[Report]:
        """Methods and functions decorated to run on rank 0 only (`@rank_zero_only`) that run a model."""
        known_words = any(word in index.source for word in ("rank_zero_only", "main_process_only", "master_only",
                                                             "on_main_process", "on_local_main_process"))
        own = _rank_decorators(index)
        if not (known_words or own):
            return
        for cls, method in index.methods("all"):
            if not _rank_zero_decorated(method.text, known_words, own):
                continue
            snippet = method.snippet
            flat = flat_of(method)
            if snippet is None or flat is None or not isinstance(snippet.node, cst.FunctionDef):
                continue
            calls = ModuleCalls(index, cls, flat, method.name)
            indirect = HelperRuns(index, cls, calls)
            for node, _ctx in flat.nodes:
                if type(node) is not cst.Call:
                    continue
                callee = calls.callee(node)
                func = node.func
                if callee is None and isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
                    if func.value.value == "self" and func.attr.value not in facts_of(cls).members:
                        if indirect.helper_runs_modules(func.attr.value) or module_helper_reaches(
                            index, cls, func.attr.value
                        ):  # (`self.save_samples()` -> `self._forward(self.model, x)`, a plain sampler given a child)
                            callee = f"self.{func.attr.value}()"
                if callee is not None:
                    decorator = _rank_zero_decorator(snippet.node, own)
                    text = (
                        f"`{method.name}` runs only on rank 0 (`@{code_of(decorator.decorator)}`) and calls "
                        f"`{callee}`; the other ranks never join its parameter all-gather and rank 0 hangs"
                    )
                    yield self.finding(index, snippet, decorator, text, _HELP)
                    break
        yield from self._rank_zero_outside_modules(index, known_words, own)

    def _rank_zero_outside_modules(self, index: ModelIndex, known_words: bool, own: frozenset[str]) -> Iterator[Report]:
        """Methods of plain classes and functions of the file decorated to run on some ranks only that reach a model
        through any number of calls (`script.method_reach`): `@main_only def save_samples(model, z): model(z)`."""
        functions = [index.function_info(name) for name in index.skeleton.functions]
        functions += [m for cls in index.classes.values() if not cls.is_module for m in cls.all_methods()]
        for function in functions:
            if function is None or not _rank_zero_decorated(function.text, known_words, own):
                continue
            snippet = function.snippet
            if snippet is None or not isinstance(snippet.node, cst.FunctionDef) or not snippet.node.decorators:
                continue
            reached = method_reach(index, function)
            if reached is None:
                continue
            decorator = _rank_zero_decorator(snippet.node, own)
            text = (
                f"`{snippet.node.name.value}` runs only on some ranks (`@{code_of(decorator.decorator)}`) and reaches "
                f"`{reached}`; the other ranks never join its parameter all-gather and the ranks that run it hang"
            )
            yield self.finding(index, snippet, decorator, text, _HELP)


# Decorators that run the function on the main process only (Lightning's, speechbrain's, mmengine's and basicsr's
# `master_only`, accelerate's `on_main_process`).
_RANK_ZERO_DECORATOR = re.compile(
    r"^\s*@(?:[\w.]+\.)?(?:rank_zero_only|main_process_only|master_only|on_main_process|on_local_main_process)\b", re.M)


# A decorator written without arguments on a line of its own (`@main_only`, `@utils.on_rank_zero`), the form a
# decorator of the program takes; the usual ones of Python and torch are no wrappers of the program.
_DECORATOR = re.compile(r"^[ \t]*@([A-Za-z_][\w.]*)[ \t]*(?:#[^\n]*)?$", re.M)
_NOT_PROGRAM = frozenset({
    "property", "staticmethod", "classmethod", "abstractmethod", "abc.abstractmethod", "cached_property",
    "functools.cached_property", "override", "typing.override", "dataclass", "dataclasses.dataclass", "torch.no_grad",
    "torch.jit.script", "torch.jit.unused", "torch.jit.ignore", "torch.jit.export", "torch.compile", "contextmanager",
    "contextlib.contextmanager", "wraps", "lru_cache", "functools.lru_cache", "cache", "functools.cache",
})


@memoised
def _rank_decorators(index: ModelIndex) -> frozenset[str]:
    """The decorators used in the file that are the program's own and run what they decorate on some ranks only
    (`taint.rank_decorator`)."""
    if "@" not in index.source:
        return frozenset()
    used = {name for name in _DECORATOR.findall(index.source) if name not in _NOT_PROGRAM and not name.endswith(".setter")}
    return frozenset(name for name in used if rank_decorator(index, name))


def _rank_zero_decorated(text: str, known_words: bool, own: frozenset[str]) -> bool:
    """Does a method's or function's text carry a decorator that runs it on some ranks only: a known one
    (`@rank_zero_only`, when the file names one: `known_words`) or one of the program's own (`own`)?"""
    return bool(known_words and _RANK_ZERO_DECORATOR.search(text)) or bool(own and own & set(_DECORATOR.findall(text)))


def _rank_zero_decorator(func: cst.FunctionDef, own: frozenset[str] = frozenset()) -> cst.Decorator:
    for decorator in func.decorators:
        written = code_of(decorator.decorator)
        if _RANK_ZERO_DECORATOR.search("@" + written) or written in own:
            return decorator
    return func.decorators[0]


_HELP = "run the call on every rank and make only its side effects (logging, writing files) rank-specific"
