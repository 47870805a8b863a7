"""One unit's storage: flat shards, the gathered buffer, and the views the module computes with.

Per unit and rank:

* the fp32 master shard: `master`, or with a split master (the bf16 default)
  `hi` (bf16, the weights rounded) plus `lo` (int16, the remainder), which
  together are the fp32 values bit for bit (`zgen.runtime.split`);
* `lp` - a low-precision shard used as the all-gather input when the master is
  plain fp32, the world size is above 1 and compute is not fp32 (with a split
  master `hi` is that input);
* `full` - the gathered flat buffer in the compute dtype. Its storage is
  resized to zero when the unit is freed and back when it is gathered again,
  so views that autograd saved in forward stay valid for backward (the same
  trick FSDP uses). At world size 1 it is `hi` or the fp32 `master` itself
  (nothing to gather), a persistent copy with `keep_low_precision`, or else
  a buffer the master is cast into just before the unit runs;
* `grad` - fp32 gradient shard, allocated at the first backward of an
  accumulation window and dropped after the optimizer step (or `held_grads`,
  autograd's own gradients handed to a split-master optimizer directly).

The module sees per-parameter views of `full` produced by `Views`, a custom
autograd function; its backward receives every parameter's gradient once all
uses in the micro-step are done, which is the unit's post-backward moment.
"""

from __future__ import annotations

import enum
import weakref

import torch

from . import split as split_codec
from .layout import FlatLayout
from .plans import BoundUnit

__all__ = ["Gathered", "UnitState", "Views"]


class Gathered(enum.Enum):
    FREE = "free"  # `full` holds nothing valid
    PENDING = "pending"  # a gather was issued on the side stream
    READY = "ready"  # the main stream has waited for the gather


class UnitState:
    """Runtime state of one unit (or of the persistent pseudo-unit)."""

    def __init__(
        self,
        bound: BoundUnit,
        layout: FlatLayout,
        rank: int,
        device: torch.device,
        compute_dtype: torch.dtype,
        keep_low_precision: bool,
        pinned: bool,
        split: bool = False,
    ) -> None:
        self.label = bound.label
        self.bound = bound
        self.layout = layout
        self.rank = rank
        self.pinned = pinned  # persistent pseudo-unit: gathered once per step, never freed
        self.split = split  # master kept as bf16 `hi` + int16 `lo` (zgen.runtime.split)
        self.names = [s.name for s in layout.slots]
        world = layout.world_size
        low = compute_dtype != torch.float32
        self.master = self.lp = self.hi = self.lo = None
        if split:
            self.hi = torch.zeros(layout.shard, dtype=torch.bfloat16, device=device)
            self.lo = torch.zeros(layout.shard, dtype=torch.int16, device=device)
        else:
            self.master = torch.zeros(layout.shard, dtype=torch.float32, device=device)
            if world > 1 and low:
                self.lp = torch.empty(layout.shard, dtype=compute_dtype, device=device)
        # `static`: `full` aliases a persistent tensor, so it is never freed and needs no gather.
        self.static = world == 1 and (not low or keep_low_precision or split)
        if world == 1 and split:
            self.full = self.hi
        elif world == 1 and not low:
            self.full = self.master
        elif self.static:
            self.full = torch.empty(layout.padded, dtype=compute_dtype, device=device)
        else:
            self.full = torch.empty(layout.padded, dtype=compute_dtype, device=device)
            self.full.untyped_storage().resize_(0)
        # Separate aliases (each `.data` has its own version counter): writes through `_write`
        # must not bump the counter of the views autograd saved from `_read`.
        self._read = self.full.data
        self._write = self.full.data
        self.state = Gathered.READY if self.static else Gathered.FREE
        self.gather_event = None
        self.update_event = None  # optimizer step of this unit, not yet ordered before the main stream
        self.grad: torch.Tensor | None = None
        self.held_grads: tuple | None = None  # per-parameter gradients handed straight to the optimizer
        self.stale_grad = None  # last step's gradients, kept until the main stream is past the step
        self.norm_sq: torch.Tensor | None = None
        self.views: tuple[torch.Tensor, ...] | None = None
        self.views_epoch = -1
        self.active = 0
        self.fired = False
        # Parameters with requires_grad=False live in a frozen companion state of their unit:
        # gathered, installed and freed with it, never given gradients or optimizer state.
        self.frozen = False
        self.companion: UnitState | None = None  # on a unit: its frozen parameters
        self.main: UnitState | None = None  # on a frozen companion: the unit it belongs to
        self.anchor = torch.empty(0, device=device, requires_grad=True)

    # -- master weights ------------------------------------------------------
    def read_master(self) -> torch.Tensor:
        """This rank's fp32 master shard (decoded, i.e. a new tensor, for a split master)."""
        return split_codec.decode(self.hi, self.lo) if self.split else self.master

    def write_master(self, values: torch.Tensor) -> None:
        """Set this rank's fp32 master shard and refresh every low-precision copy of it."""
        if self.split:
            split_codec.encode(values.to(torch.float32), self.hi, self.lo)
        else:
            self.master.copy_(values)
        self.refresh_low_precision()

    def refresh_low_precision(self) -> None:
        """Bring the compute-dtype copies up to date after the master changed."""
        if self.lp is not None:
            self.lp.copy_(self.master)
        elif self.static and not self.split and self.full is not self.master:
            self._write.copy_(self.master)

    @property
    def has_grad(self) -> bool:
        return self.grad is not None or self.held_grads is not None

    # -- storage -----------------------------------------------------------
    @property
    def gather_input(self) -> torch.Tensor:
        if self.split:
            return self.hi
        return self.lp if self.lp is not None else self.master

    def cast_into_full(self) -> None:
        """World size 1: the "gather" is a cast of the fp32 master into the gathered buffer."""
        self._write.copy_(self.master)

    def allocate(self) -> None:
        nbytes = self.layout.padded * self.full.element_size()
        storage = self.full.untyped_storage()
        if storage.size() != nbytes:
            storage.resize_(nbytes)

    def release(self) -> None:
        if not self.static and not self.pinned:
            self.full.untyped_storage().resize_(0)
            self.state = Gathered.FREE

    @property
    def write_target(self) -> torch.Tensor:
        return self._write

    def make_views(self) -> tuple[torch.Tensor, ...]:
        base = self._read
        return tuple(base[s.offset : s.end].view(s.shape) for s in self.layout.slots)

    def grad_layout_views(self, flat: torch.Tensor) -> list[torch.Tensor]:
        """Per-parameter views of a flat buffer laid out like `full`."""
        return [flat[s.offset : s.end].view(s.shape) for s in self.layout.slots]

    def gap_views(self, flat: torch.Tensor) -> list[torch.Tensor]:
        return [flat[a:b] for a, b in self.layout.gaps()]

    # -- checkpoint helpers ------------------------------------------------
    def shard_of(self, flat_full: torch.Tensor) -> torch.Tensor:
        lo, hi = self.layout.shard_range(self.rank)
        return flat_full[lo:hi]


class Views(torch.autograd.Function):
    """Hands the module one view per parameter of a gathered unit; collects their gradients.

    The forward's node fires once every use in the micro-step has its gradient: that is
    the unit's post-backward. A `partial` node is made for a unit's backward window, for
    code that a reentrant activation checkpoint recomputes inside it; each inner backward
    through it delivers some of the unit's gradients, which are folded in on the spot.
    """

    @staticmethod
    def forward(ctx, engine, unit: UnitState, anchor: torch.Tensor, partial: bool = False):  # type: ignore[override]
        # Weak references: the unit keeps its views, the views keep this node, so strong ones
        # would form a cycle through autograd that Python's collector cannot see.
        ctx.engine, ctx.unit, ctx.partial = weakref.ref(engine), weakref.ref(unit), partial
        return unit.make_views()

    @staticmethod
    def backward(ctx, *grads):  # type: ignore[override]
        engine, unit = ctx.engine(), ctx.unit()
        if engine is not None and unit is not None:
            if ctx.partial:
                engine._fold_partial(unit, grads)
            else:
                engine._post_backward(unit, grads)
        return None, None, None, None
