"""Filling each rank's fp32 master shards, from real weights or from a model built on `meta`.

Real weights (on any device) are copied slice by slice into this rank's
shards; the full model never has to fit on the device.

For a model on the `meta` device there are no values to copy. The modules are
visited in the order `model.apply(init_fn)` visits them (children first); a
unit's full fp32 buffer exists only between the first and the last module
that holds one of its parameters, and each parameter is handed to the
module as a real `nn.Parameter` view of that buffer while `init_fn` (or, when
none is given, the module's own `reset_parameters()`) runs. With the same
seed this draws the same random numbers as the plain
`model.apply(init_fn)`, so the sharded weights equal the unsharded ones.
Anything left uninitialised is reported by name instead of training on
garbage.
"""

from __future__ import annotations

from typing import Callable, Iterator

import torch
from torch import nn

from zgen.errors import ZgenError

from .plans import Binding
from .unit import UnitState

__all__ = ["fill_from_weights", "fill_from_meta", "move_buffers", "has_meta"]


def has_meta(model: nn.Module) -> bool:
    return any(t.is_meta for t in list(model.parameters()) + list(model.buffers()))


def fill_from_weights(units: list[UnitState]) -> None:
    """Copy this rank's slice of every real parameter into its unit's master shard."""
    weights = {n: p for u in units for n, p in u.bound.params}
    for u in units:
        lo, _ = u.layout.shard_range(u.rank)
        shard = torch.zeros(u.layout.shard, dtype=torch.float32, device=u.anchor.device)
        for slot, a, b in u.layout.pieces(u.rank):
            src = weights[slot.name].detach().reshape(-1)[a - slot.offset : b - slot.offset]
            shard[a - lo : b - lo].copy_(src)
        u.write_master(shard)


def fill_from_meta(
    model: nn.Module,
    units: list[UnitState],
    binding: Binding,
    init_fn: Callable[[nn.Module], None] | None,
    device: torch.device,
) -> None:
    """Initialise a meta-built model unit by unit (see the module docstring)."""
    weights = {n: p for u in units for n, p in u.bound.params}
    name_of = {id(p): n for n, p in weights.items()}
    unit_of = {name: u for u in units for name in u.names}
    order = list(_apply_order(model))
    last = {}
    for i, mod in enumerate(order):
        for p in mod._parameters.values():
            if p is not None:
                last[unit_of[name_of[id(p)]].label] = i
    full: dict[str, torch.Tensor] = {}
    wrapped: dict[str, nn.Parameter] = {}
    fresh_buffers = _materialise_buffers(model, device)
    for i, mod in enumerate(order):
        for p in list(mod._parameters.values()):
            if p is None:
                continue
            name = name_of[id(p)]
            u = unit_of[name]
            if u.label not in full:
                full[u.label] = _new_full(u, weights, device)
            if name not in wrapped:
                slot = u.layout.slots[u.names.index(name)]
                view = full[u.label][slot.offset : slot.end].view(slot.shape)
                wrapped[name] = nn.Parameter(view, requires_grad=weights[name].requires_grad)
                name_of[id(wrapped[name])] = name
                for m, a in binding.sites[name]:
                    m._parameters[a] = wrapped[name]
        with torch.no_grad():
            if init_fn is not None:
                init_fn(mod)
            elif hasattr(mod, "reset_parameters") and any(p is not None for p in mod._parameters.values()):
                mod.reset_parameters()
        for label in [lbl for lbl, j in last.items() if j == i]:
            u = next(x for x in units if x.label == label)
            _check_initialised(u, full[label], init_fn)
            u.write_master(u.shard_of(full.pop(label)))
    for name, buf in fresh_buffers:
        if buf.is_floating_point() and torch.isnan(buf).any():
            raise ZgenError(
                f"buffer `{name}` was built on the meta device and nothing initialised it",
                help="initialise it in `init_fn`, or build the model on a real device",
            )


def _apply_order(module: nn.Module) -> Iterator[nn.Module]:
    """Modules in the order `module.apply(fn)` calls `fn` on them."""
    for child in module.children():
        yield from _apply_order(child)
    yield module


def _new_full(u: UnitState, weights: dict[str, torch.Tensor], device: torch.device) -> torch.Tensor:
    # NaN marks "never written", so an init_fn that misses a parameter is caught; padding is zero.
    flat = torch.zeros(u.layout.padded, dtype=torch.float32, device=device)
    for slot in u.layout.slots:
        w = weights[slot.name]
        target = flat[slot.offset : slot.end]
        if w.is_meta:
            target.fill_(float("nan"))
        else:
            target.copy_(w.detach().reshape(-1))
    return flat


def _check_initialised(u: UnitState, flat: torch.Tensor, init_fn) -> None:
    bad = [s.name for s in u.layout.slots if torch.isnan(flat[s.offset : s.end]).any()]
    if bad:
        how = "`init_fn`" if init_fn is not None else "the modules' `reset_parameters()` (no `init_fn` was given)"
        raise ZgenError(
            f"parameter `{bad[0]}` was built on the meta device and {how} left it uninitialised"
            + (f" ({len(bad) - 1} more)" if len(bad) > 1 else ""),
            help="pass `init_fn` to zgen.runtime.initialize that sets every parameter (e.g. nn.init.ones_ for norm weights)",
        )


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
