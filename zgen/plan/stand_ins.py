"""Stand-in values for the ops that need tensor data, so a trace without data can go on.

A trace runs on `meta` (or fake) tensors, which have shapes but no values.
A few ops need values: `nonzero()` (and `torch.where(cond)`, boolean-mask
indexing, `masked_select`), whose output size depends on the data, and
`.item()` (every `if tensor:`), which returns a Python number, and
`bincount()` (as long as `minlength`). `StandIns`
answers them the way a rank might see them: every element selected, every
scalar `0` / `False`, and records each such *decision* with the user's line
and the modules running at the time.

Whether a decision is a hazard is decided on the spot: when the innermost
running module holds submodules with parameters, the value can change which
of them run (a hit-only expert loop, an early exit), so ranks with
different data can join different all-gathers; the trace stops there with a
`DecisionHazard`. Inside a module without such submodules (Mixtral's expert
loop over one stacked 3-D parameter) every rank gathers the same unit and
runs the same modules whatever the values: the trace records the decision
and continues.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = ["Decision", "DecisionHazard", "StandIns", "needs_values", "stand_in"]

_aten = torch.ops.aten

# Ops whose output size depends on the data, answered as if every element were selected.
_NONZERO = {_aten.nonzero, _aten.argwhere}
_MASKED = {_aten.masked_select}
_INDEX = {_aten.index, _aten.index_put, _aten.index_put_, _aten._index_put_impl_}
_NAMES = {"nonzero": "torch.nonzero()", "argwhere": "torch.nonzero()", "_local_scalar_dense": "Tensor.item()",
          "masked_select": "torch.masked_select()", "bincount": "torch.bincount()", "index": "boolean-mask indexing",
          "index_put": "boolean-mask indexing", "index_put_": "boolean-mask indexing",
          "_index_put_impl_": "boolean-mask indexing"}


@dataclass(frozen=True, slots=True)
class Decision:
    """One place where the model needed tensor values: the op, the user's line, the running modules."""

    op: str  # as the user wrote it, e.g. `torch.nonzero()`
    site: tuple[str, int] | None
    stack: tuple[str, ...]  # running modules, outermost first
    backward: bool


class DecisionHazard(Exception):
    """A decision inside a module whose submodules with parameters it may or may not run."""

    def __init__(self, decision: Decision) -> None:
        super().__init__(f"{decision.op} needs tensor values")
        self.decision = decision


class StandIns(TorchDispatchMode):
    """Answers value-dependent ops with stand-ins and records them (see the module docstring).

    `stack` returns the running module stack; `in_backward` whether the
    backward runs; `holds_submodules(name)` whether that module has
    descendants with parameters; `site` the user's frame. `last_op` names the
    op that ran last, for messages when something else fails.
    """

    def __init__(
        self,
        stack: Callable[[], tuple[str, ...]],
        in_backward: Callable[[], bool],
        holds_submodules: Callable[[str], bool],
        site: Callable[[Any], tuple[str, int] | None],
    ) -> None:
        super().__init__()
        self._stack = stack
        self._in_backward = in_backward
        self._holds = holds_submodules
        self._site = site
        self.decisions: list[Decision] = []
        self.last_op: str | None = None

    def _decide(self, func) -> None:
        name = func._overloadpacket.__name__
        d = Decision(_NAMES.get(name, f"aten.{name}"), self._site(sys._getframe()), self._stack(), self._in_backward())
        self.decisions.append(d)
        if not d.backward and self._holds(d.stack[-1] if d.stack else ""):
            raise DecisionHazard(d)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.last_op = f"aten.{func._overloadpacket.__name__}"
        if needs_values(func, args) is None:
            return func(*args, **kwargs)
        self._decide(func)
        return stand_in(func, args, kwargs)


def needs_values(func, args: tuple) -> str | None:
    """The user-facing name of an op whose result depends on tensor values (`Tensor.item()`,
    `torch.nonzero()`, boolean-mask indexing...), or None for any other op."""
    packet = func._overloadpacket
    if packet is _aten._local_scalar_dense or packet in _NONZERO or packet is _aten.bincount or packet in _MASKED:
        return _NAMES.get(packet.__name__, f"aten.{packet.__name__}")
    if packet in _INDEX and len(args) > 1 and _has_mask(args[1]):
        return _NAMES.get(packet.__name__, f"aten.{packet.__name__}")
    return None


def stand_in(func, args: tuple, kwargs: dict) -> Any:
    """The answer to a value op (see `needs_values`) on tensors without values: every element selected,
    every scalar `0` / `False`, `bincount` as long as `minlength`."""
    packet = func._overloadpacket
    if packet is _aten._local_scalar_dense:
        x = args[0]
        return False if x.dtype == torch.bool else (0.0 if x.is_floating_point() else 0)
    if packet in _NONZERO:
        x = args[0]
        return torch.zeros((x.numel(), x.dim()), dtype=torch.long, device=x.device)
    if packet is _aten.bincount:
        x, weights = args[0], (args[1] if len(args) > 1 else kwargs.get("weights"))
        size = max(int(args[2] if len(args) > 2 else kwargs.get("minlength", 0)), 1)
        dtype = weights.dtype if weights is not None else torch.long
        return torch.zeros((size,), dtype=dtype, device=x.device)
    if packet in _MASKED:
        x, mask = args[0], args[1]
        n = torch.broadcast_shapes(x.shape, mask.shape).numel()
        return torch.empty((n,), dtype=x.dtype, device=x.device)
    args = (args[0], _mask_to_positions(args[1]), *args[2:])
    return func(*args, **kwargs)


def _has_mask(indices: Any) -> bool:
    return any(isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) for i in pytree.tree_leaves(indices))


def _mask_to_positions(indices: list) -> list:
    """A boolean mask index as the long indices of all its elements (every element selected)."""
    out: list = []
    for i in indices:
        if isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8):
            out.extend(torch.zeros((i.numel(),), dtype=torch.long, device=i.device) for _ in range(i.dim()))
        else:
            out.append(i)
    return out
