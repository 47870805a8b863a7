"""Filling each rank's fp32 master shards, from real weights or from a model built on `meta`.

Real weights (on any device) are copied slice by slice into this rank's
shards; the full model never has to fit on the device.

For a model on `meta` (`zgen.runtime.meta_build`) the weights are made by the
model's own initialisation (`zgen.runtime.own_init`: `reset_parameters()` and
friends, Hugging Face `_init_weights`, or the user's `init_fn`), one step per
module in `model.apply` order. A dry run of every step on the meta
parameters first records which parameters each step writes; a unit's full
fp32 buffer then exists from the first step that writes one of its
parameters to the last (a parent's step that writes into a child's unit
keeps that unit open until then), and its parameters are real views of that
buffer meanwhile. With the same seed this draws the same random numbers in
the same order as `own_init.apply_init` on a full model, whatever the plan,
so the sharded weights equal the unsharded ones. A parameter no step writes
starts from the value its constructor gave it (kept for small parameters);
anything still unset is reported by name instead of training on garbage.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import nn
from torch.overrides import TorchFunctionMode
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from zgen.errors import ZgenError

from .meta_build import constructor_value
from .own_init import METHODS, init_steps
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
    unit_of = {name: u for u in units for name in u.names}
    fresh_buffers = _materialise_buffers(model, device)
    steps = init_steps(model, init_fn)
    touched = _dry_run(model, steps, weights)
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for i, names in enumerate(touched):
        for name in names:
            label = unit_of[name].label
            first.setdefault(label, i)
            last[label] = i
    live: dict[str, torch.Tensor] = {}  # unit label -> its full fp32 buffer, while steps still write it

    def open_unit(u: UnitState) -> None:
        live[u.label] = _new_full(u, weights, device, use_constructor=init_fn is None)
        for name in u.names:
            slot = u.layout.slots[u.names.index(name)]
            view = nn.Parameter(live[u.label][slot.offset : slot.end].view(slot.shape),
                                requires_grad=weights[name].requires_grad)
            for m, a in binding.sites[name]:
                m._parameters[a] = view

    def close_unit(u: UnitState) -> None:
        flat = live.pop(u.label)
        _check_initialised(u, flat, init_fn, steps)
        u.write_master(u.shard_of(flat))
        for name in u.names:  # back to the meta parameter: the full buffer is freed now
            for m, a in binding.sites[name]:
                m._parameters[a] = weights[name]

    by_label = {u.label: u for u in units}
    meta_storages = {_storage(p): n for n, p in weights.items()}
    for i, (mod_name, _, what, call) in enumerate(steps):
        for label in sorted({unit_of[n].label for n in touched[i]} - set(live), key=lambda lbl: first[lbl]):
            open_unit(by_label[label])
        with torch.no_grad(), _Touches(meta_storages) as guard:
            try:
                call()
            except Exception as e:
                raise ZgenError(
                    f"initialising module `{mod_name or '<root>'}` with `{what}` raised {type(e).__name__}: {e}",
                    help="pass --init (init_fn) with a per-module initialisation that works on this model",
                ) from None
        if guard.names:  # the dry run predicted other writes than the real run made
            raise ZgenError(
                f"initialising module `{mod_name or '<root>'}` with `{what}` wrote `{sorted(guard.names)[0]}`, "
                "which the dry run on fake tensors did not predict",
                help="pass --init (init_fn) with a per-module initialisation that does not depend on tensor values",
            )
        for label in [lbl for lbl, j in last.items() if j == i and lbl in live]:
            close_unit(by_label[label])
    for u in units:
        if u.label not in first:  # no step wrote it: the constructor's values, or an error
            open_unit(u)
            close_unit(u)
    for name, buf in fresh_buffers:
        if buf.is_floating_point() and torch.isnan(buf).any():
            raise ZgenError(
                f"buffer `{name}` was built on the meta device and nothing initialised it",
                help="initialise it in `init_fn`, or build the model on a real device",
            )


def _storage(t: torch.Tensor) -> int:
    try:
        return t.untyped_storage()._cdata
    except (RuntimeError, NotImplementedError):  # sparse and other storage-less layouts
        return -1


# Reads of a tensor's metadata: they neither need nor change its values.
_METADATA = frozenset({"__get__", "size", "dim", "numel", "stride", "element_size", "is_contiguous",
                       "is_floating_point", "is_complex", "nelement", "ndimension", "__len__", "__hash__",
                       "__format__", "__repr__"})


class _Touches(TorchFunctionMode):
    """Records which of the given parameters any call reads or writes, by storage (views count).

    A function mode, not a dispatch mode: torch's initialisers return early on
    meta tensors (`trunc_normal_`), so the write never reaches the dispatcher,
    while the call itself still comes through here.
    """

    def __init__(self, storages: dict[int, str]) -> None:
        super().__init__()
        self.storages = storages
        self.names: set[str] = set()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if getattr(func, "__name__", "") not in _METADATA:
            for leaf in pytree.tree_leaves((args, kwargs)):
                if isinstance(leaf, torch.Tensor):
                    name = self.storages.get(_storage(leaf))
                    if name is not None:
                        self.names.add(name)
        return func(*args, **kwargs)


def _dry_run(model: nn.Module, steps: list, weights: dict[str, torch.Tensor]) -> list[set[str]]:
    """Run every step on fake stand-ins of the parameters and record which parameters each one touches.

    Fake tensors, not the meta parameters themselves: torch's initialisers
    return early on meta tensors. Buffers are faked too, so the dry run
    changes no real tensor and draws no random number; a value the step asks
    for (`trunc_normal_` resamples `while mask.any()`) is answered `0`/`False`.
    A step that still fails is taken to touch every parameter below its module.
    """
    from torch._subclasses.fake_tensor import FakeTensorMode

    mode = FakeTensorMode(allow_non_fake_inputs=True)
    fakes: dict[int, torch.Tensor] = {}
    storages: dict[int, str] = {}
    name_of = {id(w): n for n, w in weights.items()}
    subtree = {id(mod): {name_of[id(p)] for p in mod.parameters()} for _, mod, _, _ in steps}
    saved = []
    for m in model.modules():
        for k, p in list(m._parameters.items()):
            if p is None:
                continue
            if id(p) not in fakes:
                with mode:
                    fakes[id(p)] = nn.Parameter(torch.empty(p.shape, dtype=p.dtype, device="cpu"),
                                                requires_grad=p.requires_grad)
                storages[_storage(fakes[id(p)])] = name_of[id(p)]
            saved.append((m._parameters, k, p))
            m._parameters[k] = fakes[id(p)]
        for k, b in list(m._buffers.items()):
            if b is not None:
                saved.append((m._buffers, k, b))
                with mode:
                    m._buffers[k] = torch.empty(b.shape, dtype=b.dtype, device="cpu")
    out: list[set[str]] = []
    try:
        for _, module, _, call in steps:
            with torch.no_grad(), mode, _NoValues(), _Touches(storages) as rec:
                try:
                    call()
                except Exception:
                    rec.names |= subtree[id(module)]
            out.append(rec.names)
    finally:
        for table, k, t in saved:
            table[k] = t
    return out


class _NoValues(TorchDispatchMode):
    """Answers `.item()` on a fake tensor with `0` / `False` (the dry run needs no real branch)."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func._overloadpacket is torch.ops.aten._local_scalar_dense:
            x = args[0]
            return False if x.dtype == torch.bool else (0.0 if x.is_floating_point() else 0)
        return func(*args, **(kwargs or {}))


def _new_full(u: UnitState, weights: dict[str, torch.Tensor], device: torch.device, use_constructor: bool) -> torch.Tensor:
    # NaN marks "never written", so an initialisation that misses a parameter is caught; padding is zero.
    flat = torch.zeros(u.layout.padded, dtype=torch.float32, device=device)
    for slot in u.layout.slots:
        w = weights[slot.name]
        target = flat[slot.offset : slot.end]
        start = constructor_value(w) if (w.is_meta and use_constructor) else None
        if not w.is_meta:
            target.copy_(w.detach().reshape(-1))
        elif start is not None:
            target.copy_(start.reshape(-1))
        else:
            target.fill_(float("nan"))
    return flat


def _check_initialised(u: UnitState, flat: torch.Tensor, init_fn, steps) -> None:
    bad = [s.name for s in u.layout.slots if torch.isnan(flat[s.offset : s.end]).any()]
    if bad:
        how = "`init_fn`" if init_fn is not None else (
            "the model's own initialisation (" + ", ".join(f"`{m}`" for m in METHODS) + ", Hugging Face "
            "`_init_weights`; no `init_fn` was given)")
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
