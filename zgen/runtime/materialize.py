"""Filling each rank's fp32 master shards, from real weights or from a model built on `meta`.

Real weights (on any device) are copied slice by slice into this rank's
shards; the full model never has to fit on the device.

A model built by `build_on_meta(factory, record=...)` carries the program of
its constructor (`zgen.runtime.deferred`): its weights are made by replaying
that program, so each rank starts from exactly the weights `factory()` gives
(bit for bit on the CPU under "exact"). `init_fn`, when given, runs after the
constructor as `model.apply(init_fn)` would (children first) and is recorded
into the same program. A model its author built on `meta` (no program) gets
its modules' own initialisation methods instead (`zgen.runtime.own_init`).
The replay hands over each parameter the moment its value is final; this
rank's slice goes into the unit's shard and the rest is freed, so no more than
a few parameters are ever whole. A parameter whose value is uninitialised
memory (`torch.empty` and nothing wrote it) is reported by name.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import nn

from zgen.errors import ZgenError

from . import meta_build
from .deferred import Program, Recorder, Ref
from .meta_build import program_of
from .own_init import METHODS, init_steps
from .plans import Binding
from .unit import UnitState

__all__ = ["fill_from_weights", "fill_from_meta", "move_buffers", "has_meta"]


def has_meta(model: nn.Module) -> bool:
    return any(t.is_meta for t in list(model.parameters()) + list(model.buffers()))


def fill_from_weights(units: list[UnitState]) -> None:
    """Copy this rank's slice of every real parameter into its unit's master shard."""
    weights = {n: p for u in units for n, p in u.bound.params}
    sink = _ShardSink(units)
    for name, w in weights.items():
        sink(name, w.detach())


class _ShardSink:
    """Takes whole parameters one at a time and writes each unit's shard once all of its parameters came."""

    def __init__(self, units: list[UnitState]) -> None:
        self.unit_of = {name: u for u in units for name in u.names}
        self.pending: dict[str, tuple[torch.Tensor, set[str]]] = {}

    def __call__(self, name: str, value: torch.Tensor) -> None:
        u = self.unit_of[name]
        shard, left = self.pending.get(u.label) or (
            torch.zeros(u.layout.shard, dtype=torch.float32, device=u.anchor.device), set(u.names))
        lo, _ = u.layout.shard_range(u.rank)
        flat = value.reshape(-1)
        for slot, a, b in u.layout.pieces(u.rank):
            if slot.name == name:
                shard[a - lo : b - lo].copy_(flat[a - slot.offset : b - slot.offset])
        left.discard(name)
        if left:
            self.pending[u.label] = (shard, left)
        else:
            self.pending.pop(u.label, None)
            u.write_master(shard)


def fill_from_meta(
    model: nn.Module,
    units: list[UnitState],
    binding: Binding,
    init_fn: Callable[[nn.Module], None] | None,
    device: torch.device,
    seeded: bool = False,
) -> None:
    """Make the weights of a meta-built model unit by unit (see the module docstring)."""
    del binding  # parameters are found through the units; kept for the caller's signature
    program = program_of(model) or Program(seeded=seeded, base_seed=torch.initial_seed() % (2**31))
    weights = {n: p for u in units for n, p in u.bound.params}
    fresh_buffers = _materialise_buffers(model, device)
    unknown = {id(w) for w in weights.values() if id(w) not in program.params}
    if init_fn is not None:
        _record_steps(model, program, init_steps(model, init_fn), weights)
    elif unknown:
        own = [s for s in init_steps(model) if any(id(p) in unknown for p in s[1]._parameters.values() if p is not None)]
        _record_steps(model, program, own, weights)
    refs = {n: program.params[id(w)] for n, w in weights.items()}
    unset = sorted(n for n, r in refs.items() if r.storage in program.unset({r.storage}))
    if unset:
        how = "`init_fn`" if init_fn is not None else (
            "the model's own initialisation (" + ", ".join(f"`{m}`" for m in METHODS) + ", Hugging Face "
            "`_init_weights`)" if unknown else "the constructor")
        raise ZgenError(
            f"parameter `{unset[0]}` is uninitialised memory: it is made with `torch.empty` (or on the meta device) "
            f"and {how} never writes it" + (f" ({len(unset) - 1} more)" if len(unset) > 1 else ""),
            help="initialise it in the constructor or in `reset_parameters`, or pass `init_fn` to "
            "zgen.runtime.initialize (e.g. nn.init.ones_ for norm weights)",
        )
    sink = _ShardSink(units)
    program.replay(refs, sink, device)
    for name, buf in fresh_buffers:
        if buf.is_floating_point() and torch.isnan(buf).any():
            raise ZgenError(
                f"buffer `{name}` was built on the meta device and nothing initialised it",
                help="initialise it in `init_fn`, or build the model on a real device",
            )


def _record_steps(model: nn.Module, program: Program, steps: list, weights: dict[str, torch.Tensor]) -> None:
    """Run initialisation steps on the model's deferred parameters, appending what they do to `program`."""
    recorder = Recorder(program, meta_build.KEEP_NUMEL)
    for w in weights.values():  # made on meta by the model's author: uninitialised until a step writes it
        if id(w) not in program.params:
            fake = recorder.fake_like(w)
            program.add_unset(fake, torch.device("cpu"))
            program.params[id(w)] = Ref.of(fake)
            program.fakes[id(w)] = fake
    swapped = []
    for m in model.modules():
        for k, p in list(m._parameters.items()):
            if p is not None and id(p) in program.fakes:
                swapped.append((m, k, p))
                m._parameters[k] = program.fakes[id(p)]
    try:
        for mod_name, _module, what, call in steps:
            with torch.no_grad(), recorder:
                try:
                    call()
                except Exception as e:
                    raise ZgenError(
                        f"initialising module `{mod_name or '<root>'}` with `{what}` raised {type(e).__name__}: {e}",
                        help="pass --init (init_fn) with a per-module initialisation that works on this model",
                    ) from None
    finally:
        for m, k, p in swapped:
            m._parameters[k] = p


def _materialise_buffers(model: nn.Module, device: torch.device) -> list[tuple[str, torch.Tensor]]:
    """Real storage for meta buffers (NaN-filled, to catch an init_fn that skips them); others moved."""
    fresh = []
    for mod_name, mod in model.named_modules():
        for name, buf in list(mod._buffers.items()):
            if buf is None:
                continue
            if buf.is_meta:
                new = torch.empty(buf.shape, dtype=buf.dtype, device=device)
                new.fill_(float("nan") if new.is_floating_point() else 0)
                mod._buffers[name] = new
                fresh.append((f"{mod_name}.{name}" if mod_name else name, new))
            elif buf.device != device:
                mod._buffers[name] = buf.to(device)
    return fresh


def move_buffers(model: nn.Module, device: torch.device) -> None:
    """Put every buffer on the training device (buffers are replicated, not sharded)."""
    for mod in model.modules():
        for name, buf in list(mod._buffers.items()):
            if buf is not None and buf.device != device:
                mod._buffers[name] = buf.to(device)
