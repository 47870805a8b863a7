"""The stand-in a module holds for a parameter while it is partitioned.

Outside the forward of the unit that gathers it, a parameter exists only as
1/N shards inside the engine. DeepSpeed leaves an empty tensor in its place,
so `p.numel()` is 0 and `model.apply(init)` or `clip_grad_norm_` silently do
nothing. zgen puts a `Partitioned` there instead: its shape, dtype and
`numel()` are the real ones, and any computation with it raises a `ZgenError`
that names the parameter, its unit, and what to do instead.
"""

from __future__ import annotations

from typing import Callable

import torch

from zgen.errors import ZgenError

__all__ = ["Partitioned"]

# Metadata a user may read from a partitioned parameter; everything else raises.
_DESCRIPTORS = tuple(
    getattr(torch.Tensor, n) for n in ("shape", "dtype", "device", "requires_grad", "ndim", "is_leaf", "layout")
)
_METHODS = {torch.Tensor.size, torch.Tensor.dim, torch.Tensor.numel, torch.Tensor.element_size, torch.Tensor.is_floating_point}


class Partitioned(torch.Tensor):
    """Metadata-only placeholder for a partitioned parameter (lives on the `meta` device)."""

    _zgen_name: str
    _zgen_unit: str
    _zgen_context: Callable[[], Callable[[], str] | None]  # a weak method of the engine

    @staticmethod
    def __new__(cls, name: str, unit: str, like: torch.Tensor, context: Callable[[], str]) -> Partitioned:
        t = torch.Tensor._make_wrapper_subclass(
            cls, like.shape, dtype=like.dtype, device="meta", requires_grad=like.requires_grad
        )
        t._zgen_name, t._zgen_unit, t._zgen_context = name, unit, context
        return t

    def __repr__(self, *, tensor_contents=None) -> str:  # noqa: D105 - printing must not raise
        return f"Partitioned({self._zgen_name!r}, shape={tuple(self.shape)}, unit={self._zgen_unit!r})"

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in _METHODS or getattr(func, "__self__", None) in _DESCRIPTORS:
            with torch._C.DisableTorchFunctionSubclass():
                return func(*args, **(kwargs or {}))
        victim = next((a for a in _flat(args, kwargs) if isinstance(a, Partitioned)), None)
        raise _error(victim, getattr(func, "__name__", str(func)))

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        victim = next((a for a in _flat(args, kwargs) if isinstance(a, Partitioned)), None)
        raise _error(victim, str(func))


def _flat(args, kwargs):
    for a in list(args) + list((kwargs or {}).values()):
        if isinstance(a, (list, tuple)):
            yield from a
        else:
            yield a


def _error(p: Partitioned | None, op: str) -> ZgenError:
    if p is None:
        return ZgenError(f"`{op}` was called on a parameter partitioned by zgen.runtime")
    context = p._zgen_context()
    where = context() if context is not None else "after its engine was discarded"
    unit = p._zgen_unit or "<root>"
    return ZgenError(
        f"parameter `{p._zgen_name}` is partitioned (it belongs to unit `{unit}`) and `{op}` read it {where}",
        help=(
            "read weights through `engine.full_state_dict()`; if a unit's forward reads another unit's "
            "parameter, list it under that unit's `external` in the plan (`zgen plan` finds these)"
        ),
    )
