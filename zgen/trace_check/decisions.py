"""Decisions on tensor values: where the model turned a tensor into control flow, what it decided, and on what.

A decision is an op whose result depends on the values of a tensor and so
can steer Python: `Tensor.item()` and every `if tensor:` (`_local_scalar_dense`),
`nonzero()` and one-argument `torch.where` (which experts got tokens),
boolean-mask indexing, `masked_select`, `bincount`, `torch.equal`, and
`tolist()` (seen by `AccessWatch`, below the dispatcher). `Decisions`, a
`TorchDispatchMode`, records each one with the user's line, its value and the
*taint* of its input:

* `data`: computed from the micro batch (the inputs function's tensors);
* `random`: computed from a random draw (`torch.rand`, dropout, `bernoulli`),
  and which draws: each draw is labelled by its user line and occurrence
  (`draws.DRAW`), up to `MAX_DRAWS` of them (beyond that, `MANY_DRAWS`);
* a value that went through a collective (`all_reduce`, `broadcast`) is the
  same on every rank and carries no taint (`ranks.Collectives` clears it).

Draws of Python's `random` and numpy's generator (`draws.python_draws`) are
recorded as decisions too, labelled alike: the program decides on them with
Python comparisons the dispatcher never sees.

On tensors without values (`meta`/fake, the large-model mode) a decision is
answered with a stand-in (`zgen.plan.stand_ins`: every element selected, every
scalar 0/False). A decision can be *forced*: one that depends on the data is
answered the other way (`Force`); one that depends on known draws only gets
those draws at one end of what they can be (`ForceDraws`, `draws.extreme`), so
the decision itself is computed and never takes an answer its draws cannot give
(`torch.rand([]) < 0` stays False). The run then shows whether the modules
with parameters that run change, which is what makes it a hazard (see `check`).
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from zgen.plan.frames import user_site_stack
from zgen.plan.stand_ins import needs_values, stand_in

from .draws import DRAW, RANDOM_OPS, extreme

__all__ = ["Decision", "Force", "ForceDraws", "variants", "draws_of", "Decisions", "TAINT_ATTR", "taint", "mark"]

_aten = torch.ops.aten

TAINT_ATTR = "_zgen_taint"

# Draws a taint names one by one; a value computed from more is labelled MANY_DRAWS instead.
MAX_DRAWS = 8
MANY_DRAWS = "many draws"
_EXTRA = {_aten.equal: "torch.equal()", _aten.is_nonzero: "Tensor.__bool__()"}
for _n in ("_unique2", "unique_dim", "unique_consecutive"):
    if hasattr(_aten, _n):
        _EXTRA[getattr(_aten, _n)] = "torch.unique()"


@dataclass(frozen=True, slots=True)
class Decision:
    """One decision: the op as the user wrote it, the user's (file, line), the k-th time that line decided
    in this run, its value (comparable across runs; None without values), the taint and the phase."""

    op: str
    site: tuple[str, int] | None
    occurrence: int
    value: Any
    taint: frozenset[str]
    phase: str


@dataclass(frozen=True, slots=True)
class Force:
    """Answer the `occurrence`-th decision by `op` at `site` the other way. An integer has two other ways
    (`variant`): zero (or one, for a zero), and its neighbour (another parity, key or index)."""

    op: str
    site: tuple[str, int]
    occurrence: int
    variant: int = 0


@dataclass(frozen=True, slots=True)
class ForceDraws:
    """Give these draws ((DRAW, site, occurrence) labels) the low or the high end of their support."""

    draws: frozenset
    high: bool


def draws_of(labels: frozenset) -> frozenset | None:
    """The draws a taint names, or None when it depends on more than `MAX_DRAWS` (or names none)."""
    if MANY_DRAWS in labels:
        return None
    found = frozenset(x for x in labels if isinstance(x, tuple) and x and x[0] == DRAW)
    return found or None


def variants(value: Any) -> int:
    """How many other answers `Force` tries for a decision that answered `value`."""
    return 2 if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2 else 1


def taint(t: Any) -> frozenset[str]:
    return getattr(t, TAINT_ATTR, frozenset()) if isinstance(t, torch.Tensor) else frozenset()


def mark(t: Any, labels: frozenset[str]) -> None:
    """Set a tensor's taint (nothing for other objects or tensors that refuse attributes)."""
    if isinstance(t, torch.Tensor):
        try:
            setattr(t, TAINT_ATTR, labels)
        except (AttributeError, RuntimeError):
            pass


class Decisions(TorchDispatchMode):
    """Records decisions (see the module docstring); `values=False` answers them with stand-ins.

    `phase()` names the phase running (`step`, `entry ...`). The taint of
    every op's output is the union of its inputs', plus `random` for a draw.
    """

    def __init__(self, *, values: bool, phase, force: Force | ForceDraws | None = None) -> None:
        super().__init__()
        self.values = values
        self.phase = phase
        self.force = force
        self.forced = False
        self.decisions: list[Decision] = []
        self._seen: Counter[tuple] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = needs_values(func, args) or _EXTRA.get(func._overloadpacket)
        labels = _union(args, kwargs)
        if name is not None:
            out = self._decide(name, func, args, kwargs, labels)
        else:
            out = func(*args, **kwargs)
            if func._overloadpacket in RANDOM_OPS:
                out, labels = self._draw(func, args, kwargs, out, labels)
        if labels:
            for leaf in pytree.tree_leaves(out):
                mark(leaf, labels)
        return out

    def decide_tolist(self, tensor: torch.Tensor, compute) -> Any:
        """`Tensor.tolist()`: recorded like the ops above; forced, a list of zeros (or ones, if it was zeros)."""
        site = user_site_stack(sys._getframe(1))
        occurrence = self._count("Tensor.tolist()", site)
        if self.values:
            value = compute()
        else:
            value = _nested(tensor.shape, 0)
        if self._is_forced("Tensor.tolist()", site, occurrence):
            value = _nested(tensor.shape, 1 if _all_zero(value) else 0)
        self.decisions.append(Decision("Tensor.tolist()", site, occurrence, _signature(value),
                                       taint(tensor), self.phase()))
        return value

    def python_draw(self, name: str, compute, ends) -> Any:
        """A draw of Python's `random` or numpy's generator (`draws.python_draws`): recorded as a decision on
        its own value, forced to an end of `ends` (low, high) when asked."""
        site = user_site_stack(sys._getframe(1))
        occurrence = self._count(name, site)
        label = (DRAW, name, site, occurrence)
        high = self._forced_draw(label)
        if high is not None and ends is not None:
            self.forced = True
            value = ends[1] if high else ends[0]
        else:
            value = compute()
        self.decisions.append(Decision(name, site, occurrence, _signature(value), frozenset({"random", label}),
                                       self.phase()))
        return value

    # -- internals ---------------------------------------------------------------------------

    def _draw(self, func, args, kwargs, out, labels: frozenset[str]) -> tuple[Any, frozenset]:
        """A random op: labelled `random` and, with values, by its site and occurrence; forced when asked."""
        labels = labels | {"random"}
        if not self.values:
            return out, labels
        name = f"torch.{func._overloadpacket.__name__}()"
        site = user_site_stack(sys._getframe(2))
        label = (DRAW, name, site, self._count(name, site))
        high = self._forced_draw(label)
        if high is not None:
            forced = extreme(func, args, kwargs, out, high)
            if forced is not None:
                self.forced = True
                if func._overloadpacket.__name__.endswith("_"):  # in place: the tensor drawn into holds it
                    with torch.no_grad():
                        args[0].copy_(forced)
                    forced = args[0]
                out = forced
        return out, _capped(labels | {label})

    def _count(self, name: str, site) -> int:
        """The how-manieth time `name` happens at `site` in this run (0 for the first)."""
        key = (name, site)
        occurrence = self._seen[key]
        self._seen[key] += 1
        return occurrence

    def _forced_draw(self, label: tuple) -> bool | None:
        """True/False (the high/low end) when the draw `label` is forced, else None."""
        f = self.force
        return f.high if isinstance(f, ForceDraws) and label in f.draws else None

    def _decide(self, name: str, func, args, kwargs, labels: frozenset[str]) -> Any:
        site = user_site_stack(sys._getframe(2))
        occurrence = self._count(name, site)
        forced = self._is_forced(name, site, occurrence)
        if forced:
            out = self._other(func, args, kwargs)
        elif self.values:
            out = func(*args, **kwargs)
        else:
            out = _stand_in(func, args, kwargs)
        self.decisions.append(Decision(name, site, occurrence, _signature(out) if self.values else None,
                                       labels, self.phase()))
        return out

    def _is_forced(self, op: str, site, occurrence: int) -> bool:
        f = self.force
        if isinstance(f, Force) and not self.forced and f.op == op and f.site == site and f.occurrence == occurrence:
            self.forced = True
            return True
        return False

    def _other(self, func, args, kwargs) -> Any:
        """The opposite answer of a decision: flipped scalars, an empty selection for a full one and back."""
        packet = func._overloadpacket
        actual = func(*args, **kwargs) if self.values else _stand_in(func, args, kwargs)
        if packet in (_aten._local_scalar_dense, _aten.equal, _aten.is_nonzero):
            if isinstance(actual, bool):
                return not actual
            if isinstance(actual, int):
                if isinstance(self.force, Force) and self.force.variant == 1:
                    return actual - 1 if actual > 0 else actual + 1
                return 0 if actual else 1
            return 0.0 if actual > 0.5 else 1.0
        if packet in (_aten.nonzero, _aten.argwhere):
            x = args[0]
            if actual.shape[0]:
                return actual[:0]
            return torch.ones_like(x, dtype=torch.bool).nonzero() if self.values else \
                torch.zeros((x.numel(), x.dim()), dtype=torch.long, device=x.device)
        if packet is _aten.masked_select:
            mask = args[1]
            flipped = torch.zeros_like(mask) if actual.numel() else torch.ones_like(mask)
            return func(args[0], flipped, *args[2:], **kwargs) if self.values else actual[:0]
        if len(args) > 1 and isinstance(args[1], (list, tuple)):  # boolean-mask indexing
            any_selected = actual.numel() > 0
            masks = [(torch.zeros_like(i) if any_selected else torch.ones_like(i))
                     if isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) else i for i in args[1]]
            new = (args[0], masks, *args[2:])
            return func(*new, **kwargs) if self.values else _stand_in(func, new, kwargs)
        return actual


def _stand_in(func, args, kwargs) -> Any:
    if func._overloadpacket in _EXTRA:
        packet = func._overloadpacket
        if packet in (_aten.equal, _aten.is_nonzero):
            return False
        x = args[0]
        outs = (x.reshape(-1), torch.zeros(x.shape, dtype=torch.long, device=x.device),
                torch.ones((x.numel(),), dtype=torch.long, device=x.device))
        return outs
    return stand_in(func, args, kwargs)


def _capped(labels: frozenset) -> frozenset:
    """At most `MAX_DRAWS` draws named; more become `MANY_DRAWS`."""
    if MANY_DRAWS in labels:
        return frozenset(x for x in labels if not isinstance(x, tuple))
    if sum(isinstance(x, tuple) for x in labels) > MAX_DRAWS:
        return frozenset(x for x in labels if not isinstance(x, tuple)) | {MANY_DRAWS}
    return labels


def _union(args: tuple, kwargs: dict) -> frozenset[str]:
    labels: frozenset[str] = frozenset()
    for a in (*args, *kwargs.values()):
        if isinstance(a, torch.Tensor):
            t = getattr(a, TAINT_ATTR, None)
            if t:
                labels = labels | t
        elif isinstance(a, (list, tuple)):
            for b in a:
                t = getattr(b, TAINT_ATTR, None) if isinstance(b, torch.Tensor) else None
                if t:
                    labels = labels | t
    return _capped(labels) if len(labels) > MAX_DRAWS else labels


def _signature(value: Any) -> Any:
    """A comparable, hashable form of a decision's answer."""
    if isinstance(value, torch.Tensor):
        if value.device.type == "meta" or not _is_plain(value):
            return None
        return (tuple(value.shape), hash(value.detach().contiguous().view(-1).to(torch.float64).numpy().tobytes())
                if value.numel() <= 1 << 16 else value.numel())
    if isinstance(value, tuple):
        return tuple(_signature(v) for v in value)
    if isinstance(value, list):
        return repr(value) if len(value) < 4096 else len(value)
    return value


def _is_plain(t: torch.Tensor) -> bool:
    return type(t) is torch.Tensor or type(t) is torch.nn.Parameter


def _all_zero(value: Any) -> bool:
    if isinstance(value, list):
        return all(_all_zero(v) for v in value)
    return not value


def _nested(shape: torch.Size, fill: int) -> Any:
    if not shape:
        return fill
    return [_nested(shape[1:], fill) for _ in range(shape[0])]
