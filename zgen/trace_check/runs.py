"""One run: the model built, trained for one step and handed to each entry, as one simulated rank.

A run builds a fresh model (seeded as every rank seeds it), seeds its own
random state, asks the inputs function for its own micro batch, then runs
the training step (forward, loss, backward) and each `--entry fn(model,
batch)`, recording events (`events.Tracker`) and decisions
(`decisions.Decisions`). With `hazards` it is the *full* run: the build runs
under the simulated `zero.Init` and every use of a partitioned parameter is
checked.

Values. A model whose parameters fit in `REAL_PARAM_BYTES` (and a batch of at
most `REAL_TOKENS` tokens) runs on the CPU with real tensors: every decision
on a value is the one the model really takes, at a cost of milliseconds for
the small models this is for. A larger one is built with its parameters on
`meta` (`zgen.runtime.meta_build`, as `zgen plan` does) and runs on `meta`
tensors: no memory, no arithmetic, and every decision on a value answered by
a stand-in (`zgen.plan.stand_ins`), which the check can then force the other way.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.nn.modules import module as nn_module
from torch.utils import _pytree as pytree

from zgen.errors import ZgenError
from zgen.plan.frames import where
from zgen.plan.trace import (Target, call_arguments, inputs_batch, step_loss, swap_params, synthetic_inputs,
                             vocab_size)
from zgen.runtime.meta_build import build_on_meta

from .access import AccessWatch
from .decisions import Decision, Decisions, Force, ForceDraws, mark
from .deepspeed_api import honoured
from .draws import python_draws
from .events import Diverged, Phase, Tracker
from .hazards import Hazards
from .partitions import Partitions
from .ranks import Collectives, as_rank, seeded
from .zero_init import InitWatcher

__all__ = ["Program", "Factors", "RunRecord", "run", "batch_structure", "REAL_PARAM_BYTES", "REAL_TOKENS"]

# Real CPU tensors up to this many bytes of parameters (fp32): 16M parameters build and run in well under a
# second; above it, `meta`.
REAL_PARAM_BYTES = 64 << 20
# ... and up to this many tokens per micro batch, so activations stay small too.
REAL_TOKENS = 8192

BUILD_SEED = 0
STEP_SEED = 1000
DATA_SEED = 2000


@dataclass(frozen=True)
class Program:
    """What the check runs: the user's functions and the job's shape."""

    factory: Callable[[], Any]
    factory_target: Target
    inputs: tuple[Callable[..., Any], Target] | None
    loss: tuple[Callable[..., Any], Target] | None
    entries: tuple[tuple[Callable[..., Any], Target], ...]
    batch_size: int
    seq_len: int
    world_size: int
    gpus_per_node: int | None
    persistence_threshold: int
    real: bool  # real CPU tensors (else meta, or fake with `fake`)
    fake: bool = False  # fake tensors where a meta kernel cannot run the model (autocast on meta)


@dataclass(frozen=True)
class Factors:
    """What makes one simulated rank differ from another: its rank, its data seed and its random seed."""

    rank: int
    data: int
    random: int

    def label(self) -> str:
        return f"rank {self.rank}" + (f", data {self.data}" if self.data != self.rank else "") + (
            f", random state {self.random}" if self.random != self.rank else "")


@dataclass
class RunRecord:
    """What one run did."""

    factors: Factors
    phases: list[Phase] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    error: BaseException | None = None
    error_phase: str | None = None
    diverged: bool = False  # stopped at its first call that left the expected ones
    forced: bool = False  # the forced decision was reached


def run(program: Program, factors: Factors, collectives: Collectives, *, hazards: Hazards | None = None,
        watch_build: bool = False, force: Force | ForceDraws | None = None, expect: dict[str, list[str]] | None = None,
        backward: bool = True, lines: bool = True) -> RunRecord:
    """Run `program` as the rank `factors` describe (see the module docstring).

    With `hazards`, uses of partitioned parameters in the step and entries are checked, and with
    `watch_build` the build runs under the simulated `zero.Init` and is checked too. With `force`, that
    decision is answered the other way (or those draws forced to one end); with `expect`, the run stops at
    its first call not in it. Without `backward`, the step is the forward and the loss (the module calls;
    what a rank gathers for backward follows from them). Without `lines`, the user's lines are not traced (the
    calls are still recorded; a tenth of the cost).
    """
    record = RunRecord(factors)
    parts = Partitions(program.persistence_threshold)
    tracker = Tracker(parts, expect=expect, lines=lines)
    if hazards is not None:
        hazards.partitions = parts
        hazards.phase = lambda: tracker.phase
        hazards.build_call = tracker.build_call
    decisions = Decisions(values=program.real, phase=lambda: tracker.phase, force=force)
    watch = AccessWatch(parts, hazards.access if hazards is not None else None, decisions.decide_tolist)
    with as_rank(factors.rank, program.world_size, program.gpus_per_node), honoured(parts), \
            collectives.active(program.world_size, tracker.call):
        seeded(BUILD_SEED)
        model = _build(program, parts, tracker, watch if watch_build and hazards is not None else None)
        seeded(STEP_SEED + factors.random)
        batch, where_from = _batch(program, model, factors)
        tracker.name_modules(model)
        with _without_values(model, program) as (device, prepared):
            batch = prepared(batch)
            parts.partition_model(model)
            if hazards is not None and watch_build:
                hazards.name_build_hazards()
            for leaf in pytree.tree_leaves(batch):
                mark(leaf, frozenset({"data"}))
            args, kwargs = call_arguments(batch)
            model.train()
            try:
                with tracker, watch, device, decisions, python_draws(decisions.python_draw), \
                        _created_watch(hazards, tracker):
                    tracker.begin("step")
                    out = model(*args, **kwargs)
                    loss = step_loss(out, program.loss, kwargs if kwargs else args, where_from)
                    if backward and loss.requires_grad:
                        tracker.begin("backward")
                        loss.backward()
                    for fn, target in program.entries:
                        tracker.begin(f"entry {target}")
                        fn(model, batch)
            except Diverged:
                record.diverged = True
            except ZgenError:
                raise
            except Exception as e:
                record.error, record.error_phase = e, tracker.phase
    record.phases = tracker.phases
    record.decisions = decisions.decisions
    record.forced = decisions.forced
    return record


def raise_failure(record: RunRecord, program: Program) -> None:
    """Turn the error of the reference run into one line naming the user's statement (exit 2)."""
    e, phase = record.error, record.error_phase or "step"
    if e is None:
        return
    if phase.startswith("entry "):
        target = phase.removeprefix("entry ")
        what, helptext = f"--entry `{target}` raised", "the entry is called as fn(model, batch) after the training step"
    else:
        what = "the training step (forward, loss, backward) raised"
        helptext = ("the model runs one training step on the micro batch of --inputs"
                    + ("" if program.real else " on fake tensors" if program.fake else " on the meta device"))
    raise ZgenError(f"{what} {type(e).__name__}: {_first_line(e)}{where(e.__traceback__)}", help=helptext)


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


def _build(program: Program, parts: Partitions, tracker: Tracker, watch: AccessWatch | None) -> nn.Module:
    """Call the factory (under the simulated `zero.Init` when `watch` is given); errors name the user's line."""
    target = program.factory_target

    def build() -> Any:
        if watch is None:
            return program.factory()
        with tracker, watch, InitWatcher(parts) as inits:
            tracker.inits = lambda: inits.inits
            return program.factory()

    try:
        model = build() if program.real else meta_build(build)
    except ZgenError:
        raise
    except Exception as e:
        raise factory_failed(target, e) from None
    finally:
        tracker.inits = lambda: 0
    return checked_module(target, model)


def factory_failed(target: Target, e: BaseException) -> ZgenError:
    """The error for a factory that raised: one line naming the user's statement."""
    return ZgenError(f"{target.option} `{target}`: the factory raised {type(e).__name__}: {_first_line(e)}"
                     f"{where(e.__traceback__)}", help="the factory is called with no arguments and returns the model")


def checked_module(target: Target, model: Any) -> nn.Module:
    """`model` if the factory returned a module, else the error saying what it returned."""
    if not isinstance(model, nn.Module):
        raise ZgenError(f"{target.option} `{target}`: the factory returned a {type(model).__name__}, "
                        "not an `nn.Module`", help="return the model instance from the factory")
    return model


def meta_build(factory: Callable[[], Any]) -> Any:
    """The factory under `torch.device("meta")`: nothing allocated, nothing initialised. A factory that needs
    values while it builds (`torch.linspace(0, p, n).tolist()` for drop-path rates) is built as `zgen plan`
    builds it instead (`zgen.runtime.meta_build`: small parameters and buffers real while it runs)."""
    try:
        with torch.random.fork_rng(devices=[]), torch.device("meta"):
            return factory()
    except ZgenError:
        raise
    except Exception:
        return build_on_meta(factory)


def batch_structure(program: Program, data: int) -> str | None:
    """The structure of the micro batch the inputs function gives for data seed `data` (its keys, their order,
    which are None: what a forward can branch on besides values), or None without an inputs function."""
    if program.inputs is None:
        return None
    fn, target = program.inputs
    seeded(STEP_SEED)
    gen = torch.Generator().manual_seed(DATA_SEED + data)
    return str(pytree.tree_structure(inputs_batch(fn, target, program.batch_size, program.seq_len, gen)))


def _batch(program: Program, model: nn.Module, factors: Factors) -> tuple[Any, str]:
    gen = torch.Generator().manual_seed(DATA_SEED + factors.data)
    if program.inputs is not None:
        fn, target = program.inputs
        return inputs_batch(fn, target, program.batch_size, program.seq_len, gen), f"`{target}`"
    vocab = vocab_size(model)
    if vocab is None:
        raise ZgenError("cannot synthesize inputs: the model has no `nn.Embedding` to read a vocabulary size from",
                        help="pass --inputs path/to/file.py:function returning one micro batch (tuple or dict)")
    return synthetic_inputs(vocab, program.batch_size, program.seq_len, gen), "the synthesized `input_ids`/`labels`"


@contextlib.contextmanager
def _without_values(model: nn.Module, program: Program):
    """Yields the context the step runs in and a function preparing the batch for it: nothing for real
    tensors; on `meta`, buffers and batch moved there; on fake tensors, parameters swapped for fake ones
    (buffers and batch are faked by the mode as they are used). Put back afterwards."""
    if program.real:
        yield contextlib.nullcontext(), lambda batch: batch
        return
    if program.fake:
        from torch._subclasses.fake_tensor import FakeTensorMode

        fake = FakeTensorMode(allow_non_fake_inputs=True)
        swapped = swap_params(model, torch.float32, fake)
        buffers = [(m, k, b) for m in model.modules() for k, b in m._buffers.items()
                   if isinstance(b, torch.Tensor) and b.is_meta]
        with fake:
            for m, k, b in buffers:
                m._buffers[k] = torch.empty(b.shape, dtype=b.dtype, device="cpu")
        try:
            yield fake, lambda batch: batch
        finally:
            for m, k, p in swapped:
                m._parameters[k] = p
            for m, k, b in buffers:
                m._buffers[k] = b
        return
    saved = [(m, k, b) for m in model.modules() for k, b in m._buffers.items()
             if isinstance(b, torch.Tensor) and not b.is_meta]
    for m, k, b in saved:
        m._buffers[k] = b.to("meta")

    def to_meta(batch: Any) -> Any:
        return pytree.tree_map(lambda x: x.to("meta") if isinstance(x, torch.Tensor) else x, batch)

    try:
        yield torch.device("meta"), to_meta
    finally:
        for m, k, b in saved:
            m._buffers[k] = b


@contextlib.contextmanager
def _created_watch(hazards: Hazards | None, tracker: Tracker):
    """During the step and entries, a parameter registered while a forward runs is ZG106."""
    if hazards is None:
        yield
        return
    import sys

    original = nn_module.Module.register_parameter

    def register_parameter(self: nn.Module, name: str, param: Any) -> None:
        original(self, name, param)
        if param is not None and tracker.phase != "build":
            hazards.created_in_forward(param, sys._getframe(1))

    nn_module.Module.register_parameter = register_parameter  # type: ignore[method-assign]
    try:
        yield
    finally:
        nn_module.Module.register_parameter = original  # type: ignore[method-assign]
