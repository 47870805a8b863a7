"""A unit's parameter group: gathering, freeing and gradient folding around one unit's shards.

The engine's hooks decide *when* (the plan's order, prefetches, the phase of
the step); a `UnitGroup` does *what* happens to its unit at those moments:

* `unshard()` issues the unit's gather into its gathered buffer on the
  gather stream, behind the unit's last optimizer update;
  `wait_unsharded()` orders the main stream after it;
* `reshard()` frees the gathered buffer (the persistent pseudo-unit and
  buffers that alias a persistent tensor are never freed);
* `post_backward(grads)` folds the unit's gradients into its fp32 gradient
  shard on the reduce stream, or, where a split master may hold them,
  hands autograd's gradients to the optimizer as they are;
  `fold_partial(grads)` takes the gradients a reentrant checkpoint delivers
  for part of the unit;
* `apply_update(...)` / `end_step()` run the optimizer on the shard and
  keep last step's gradient buffers alive until the main stream is past it.
  On the window's last micro-step a unit's gradient is final once its
  post-backward has folded it; the context's `early` callback (set by the
  step, `zgen.runtime.step`, under optimizer offload) may then start its
  update before the backward ends. A later fold into a unit whose gradient
  was declared final marks the window `late` (the step then stops starting
  updates early); into one whose update has started, it is an error.

How a gather and a reduction cross the ranks (one rank, flat, parameter
offload, hpZ) is the group's `sharding` object, chosen once for the engine
(`zgen.runtime.sharding`). A group's storage (fp32 master, gathered buffer,
views) is its `UnitState`.
Parameters with `requires_grad=False` live in a frozen companion group that
is gathered, installed and freed with its unit and never folds gradients.
Groups of one engine share a `GroupContext`: the streams, the device, the
accumulation window and the list of gradient buffers still being read on
the reduce stream.
"""

from __future__ import annotations

import enum
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from zgen.errors import ZgenError

from . import comm
from .offload import PendingUpdate
from .sharding import Flat, HpZ, OneRank, sq_norm
from .unit import UnitState

__all__ = ["Gathered", "GroupContext", "UnitGroup", "Views"]

Sharding = OneRank | Flat | HpZ


class Gathered(enum.Enum):
    """Where a group's gathered buffer stands."""

    FREE = "free"  # `full` holds nothing valid
    PENDING = "pending"  # a gather was issued on the side stream
    READY = "ready"  # the main stream has waited for the gather


@dataclass(slots=True, eq=False)
class GroupContext:
    """What every group of one engine shares."""

    streams: comm.Streams
    device: torch.device
    accumulation: int  # micro-steps per optimizer step
    micro_steps: int = 0  # micro-steps counted so far (the engine's counter)
    # Gradient buffers being read on the reduce stream, with the event that ends the read:
    # kept alive until the main stream has waited on it (instead of `record_stream`).
    held: list[tuple[Any, tuple]] = field(default_factory=list)
    # Called with a unit whose gradient is final (window's last micro-step, after its fold); None: wait for the step.
    early: Callable[[UnitGroup], None] | None = None
    late: bool = False  # this window folded into a unit after its post-backward on the last micro-step

    def is_boundary(self) -> bool:
        """True when the current micro-step is the last of its accumulation window."""
        return (self.micro_steps + 1) % self.accumulation == 0

    def keep_until_read(self, done, grads: tuple) -> None:
        """Hold `grads` until the main stream has waited for `done` (the last read of them)."""
        self.release_held(keep_last=True)
        self.held.append((done, grads))

    def release_held(self, keep_last: bool) -> None:
        """Order the main stream after the held reads (all, or all but the newest) and drop them."""
        keep = self.held[-1:] if keep_last else []
        for ev, _ in self.held[: len(self.held) - len(keep)]:
            self.streams.wait(self.streams.main, ev)
        self.held = keep


class UnitGroup:
    """One unit (or the persistent pseudo-unit, or a unit's frozen part) and its gather/free/grad lifecycle."""

    def __init__(self, shards: UnitState, ctx: GroupContext, sharding: Sharding, frozen: bool = False) -> None:
        self.shards = shards
        self.ctx = ctx
        self.sharding = sharding  # how its gathers and reductions cross the ranks
        self.label = shards.label
        self.bound = shards.bound
        self.layout = shards.layout
        self.pinned = shards.pinned
        self.static = shards.static
        self.frozen = frozen  # requires_grad=False parameters: never gets gradients
        self.companion: UnitGroup | None = None  # on a unit: the group of its frozen parameters
        self.main: UnitGroup | None = None  # on a frozen companion: the unit it belongs to
        self.state = Gathered.READY if self.static else Gathered.FREE
        self.gather_event = None
        self.update_event = None  # optimizer step of this unit, not yet ordered before the main stream
        self.grad: torch.Tensor | None = None  # fp32 gradient shard of the accumulation window
        self.held_grads: tuple | None = None  # per-parameter gradients handed straight to the optimizer
        self.stale_grad = None  # last step's gradients, kept until the main stream is past the step
        self.norm_sq: torch.Tensor | None = None
        self.views: tuple[torch.Tensor, ...] | None = None  # the views installed in this forward
        self.views_epoch = -1  # the forward those views (and `fired`) belong to
        self.active = 0  # forward calls of this unit under way (a unit may run nested in itself)
        self.fired = False  # its post-backward ran for the current forward
        self.final = False  # its post-backward ran on the window's last micro-step: the gradient is final
        self.started = False  # its update was handed to the optimizer before the step (`GroupContext.early`)

    @property
    def has_grad(self) -> bool:
        """Gradients are waiting for the optimizer (folded into `grad`, or held as autograd gave them)."""
        return self.grad is not None or self.held_grads is not None

    @property
    def trainable(self) -> bool:
        """Has parameters that get gradients (not a frozen companion, not empty)."""
        return bool(self.layout.slots) and not self.frozen

    # ------------------------------------------------------------------ gather / free
    def unshard(self) -> None:
        """Issue the gather of this unit (and its frozen part) on the gather stream."""
        c = self.companion
        if c is not None and not c.static and c.state is Gathered.FREE:
            c.unshard()
        s = self.ctx.streams
        with s.on(s.main):
            self.shards.allocate()
        ready = s.record(s.main)
        with s.on(s.gather):
            s.wait(s.gather, ready)
            s.wait(s.gather, self._update_done())
            self.sharding.gather()
            self.gather_event = s.record(s.gather)
        self.state = Gathered.PENDING

    def wait_unsharded(self) -> None:
        """Make the gathered weights usable on the main stream (gathering now if nothing was issued)."""
        if self.companion is not None:
            self.companion.wait_unsharded()
        s = self.ctx.streams
        if self.static:
            if self.update_event is not None:
                s.wait(s.main, self._update_done())
                self.update_event, self.stale_grad = None, None
            return
        if self.state is Gathered.FREE:
            self.unshard()
        if self.state is Gathered.PENDING:
            s.wait(s.main, self.gather_event)
            self.state = Gathered.READY
            # The gather waited for this unit's optimizer update, so the main stream is now past it.
            self.update_event, self.stale_grad = None, None

    def prefetch(self) -> None:
        """Start the gather unless one is issued or done."""
        if self.state is Gathered.FREE:
            self.unshard()

    def reshard(self, keep_secondary: bool = False) -> None:
        """Free the gathered buffer (never for persistent or aliasing buffers).

        `keep_secondary` (after a forward with gradients): the sharding may first keep
        what it re-gathers from until the next update (hpZ's slice for the node).
        """
        if self.companion is not None:
            self.companion.reshard(keep_secondary)
        if self.static or self.pinned or self.state is Gathered.FREE:
            return
        if self.state is Gathered.PENDING:
            self.ctx.streams.wait(self.ctx.streams.main, self.gather_event)
        if keep_secondary and self.sharding.keeps:
            self.sharding.keep()
        self.shards.release()
        self.state = Gathered.FREE

    def settle_update(self) -> None:
        """After a forward that did not gather this unit: order the main stream after its last update."""
        if self.update_event is not None and (self.static or self.state is Gathered.FREE):
            self.ctx.streams.wait(self.ctx.streams.main, self._update_done())
            self.update_event, self.stale_grad = None, None

    def _update_done(self):
        """The event that ends this unit's last update (waiting for the host first when it is offloaded)."""
        if isinstance(self.update_event, PendingUpdate):
            self.update_event = self.update_event.wait()
        return self.update_event

    def quiesce(self) -> None:
        """Forget events (after the caller synchronised every stream and waited for the host updates)."""
        self.update_event, self.stale_grad = None, None
        if self.state is Gathered.PENDING:
            self.state = Gathered.READY
        self.reshard()

    def invalidate(self) -> None:
        """The master changed outside a step (a checkpoint load): gather again before the next use."""
        self.sharding.forget()
        if self.pinned and not self.static:
            self.state = Gathered.FREE

    # ------------------------------------------------------------------ views
    def views_for(self, epoch: int, grad: bool) -> tuple[torch.Tensor, ...]:
        """The views installed for forward `epoch` (made once per forward; fresh after `views = None`)."""
        if self.views_epoch != epoch:
            self.views_epoch, self.fired, self.views = epoch, False, None
        if self.views is None:
            # A recomputation in backward (activation checkpointing) gets a fresh node: with
            # reentrant checkpointing its gradients arrive through it and are folded like any other.
            self.views = self.new_views(grad)
        return self.views

    def new_views(self, grad: bool, partial: bool = False) -> tuple[torch.Tensor, ...]:
        """Per-parameter views: through a `Views` node when gradients are wanted (never for frozen ones)."""
        if not self.layout.slots:
            return ()
        if grad and not self.frozen:
            return Views.apply(self, self.shards.anchor, partial)
        return self.shards.make_views()

    # ------------------------------------------------------------------ gradients
    def post_backward(self, grads: tuple) -> None:
        """All of this unit's gradients for the micro-step are in: fold them and free the unit."""
        boundary = self.ctx.is_boundary()
        if boundary:
            self._check_not_final()
        if self._can_hold(grads, boundary):
            self._hold(grads)
        else:
            self._fold_after_held(grads, boundary)
        self.fired = True
        if boundary and self.sharding.kept:  # its last gather of the window is done; the step changes the weights
            self.sharding.forget()
        if not self.pinned:
            self.reshard()
        if boundary:
            self.final = True
            if self.ctx.early is not None and self.has_grad:
                self.ctx.early(self)

    def fold_partial(self, grads: tuple) -> None:
        """Gradients a reentrant checkpoint's inner backward delivered for part of the unit: fold, keep gathered."""
        if all(g is None for g in grads):
            return
        boundary = self.ctx.is_boundary()
        if boundary:
            self._check_not_final()
        self._fold_after_held(grads, boundary)

    def _check_not_final(self) -> None:
        """A fold on the window's last micro-step: note one that comes after the unit's post-backward."""
        if not self.final:
            return
        self.ctx.late = True
        if self.started:
            raise ZgenError(
                f"unit `{self.label}` received gradients after its post-backward on the last micro-step of the "
                "accumulation window, and its offloaded update had already started",
                help="run one forward and one engine.backward() per micro-step; a backward that reaches a unit "
                     "twice (a reentrant checkpoint around part of a unit, a second loss) needs the same shape "
                     "from the first step on, where the engine sees it and waits for engine.step()",
            )

    def _fold_after_held(self, grads: tuple, boundary: bool) -> None:
        """Fold `grads`, first folding gradients held for the optimizer (a second backward through the unit)."""
        if self.held_grads is not None:
            earlier, self.held_grads = self.held_grads, None
            self._fold(earlier, boundary)
        self._fold(grads, boundary)

    def _fold(self, grads: tuple, boundary: bool) -> None:
        ctx, s = self.ctx, self.ctx.streams
        first = self.grad is None
        with s.on(s.main):
            if first:
                self.grad = torch.empty(self.layout.shard, dtype=torch.float32, device=ctx.device)
        ready = s.record(s.main)
        with s.on(s.reduce):
            s.wait(s.reduce, ready)
            self.sharding.reduce(self, grads, first, boundary)  # sets norm_sq at the boundary
            done = s.record(s.reduce)
        # Keep the autograd gradients alive until the main stream has waited for their reader.
        ctx.keep_until_read(done, grads)

    def _can_hold(self, grads: tuple, boundary: bool) -> bool:
        """World size 1, split master, one micro-step per update: the optimizer reads autograd's gradients."""
        return (
            self.shards.split and self.sharding.holds and boundary and self.grad is None
            and self.held_grads is None and self.ctx.accumulation == 1 and all(g is not None for g in grads)
        )

    def _hold(self, grads: tuple) -> None:
        s = self.ctx.streams
        ready = s.record(s.main)
        with s.on(s.reduce):
            s.wait(s.reduce, ready)
            self.norm_sq = sq_norm(list(grads), self.ctx.device)
            done = s.record(s.reduce)
        self.held_grads = grads  # alive until the step has read them (then kept as stale_grad)
        self.ctx.keep_until_read(done, ())

    # ------------------------------------------------------------------ optimizer step
    def apply_update(self, optimizer, divisor: torch.Tensor, lr: float) -> None:
        """Step `optimizer` on this unit's shard (on the current stream, the optimizer's)."""
        if self.sharding.kept:  # the weights change: later gathers start from the new shards
            self.sharding.forget()
        pending = optimizer.step_unit(self.shards, self.grad if self.grad is not None else self.held_grads, divisor, lr)
        if self.pinned and not self.static:
            self.state = Gathered.FREE  # contents are last step's weights; storage stays
        if pending is not None:  # offloaded: the host copies the weights up when it is done
            self.update_event = pending
            return
        self.shards.refresh_low_precision()
        self.update_event = self.ctx.streams.record(self.ctx.streams.optim)

    def end_step(self) -> None:
        """The step is issued: drop the window's gradients (alive until the main stream is past the step)."""
        self.stale_grad = (self.grad, self.held_grads)
        self.grad = self.held_grads = self.norm_sq = None
        self.final = self.started = False
        if self.update_event is None:
            self.update_event = self.ctx.streams.record(self.ctx.streams.optim)


class Views(torch.autograd.Function):
    """Hands the module one view per parameter of a gathered unit; collects their gradients.

    The forward's node fires once every use in the micro-step has its gradient: that is
    the unit's post-backward. A `partial` node is made for a unit's backward window, for
    code that a reentrant activation checkpoint recomputes inside it; each inner backward
    through it delivers some of the unit's gradients, which are folded in on the spot.
    """

    @staticmethod
    def forward(ctx, group: UnitGroup, anchor: torch.Tensor, partial: bool = False):  # type: ignore[override]
        # A weak reference: the group keeps its views, the views keep this node, so a strong one
        # would form a cycle through autograd that Python's collector cannot see.
        ctx.group, ctx.partial = weakref.ref(group), partial
        return group.shards.make_views()

    @staticmethod
    def backward(ctx, *grads):  # type: ignore[override]
        group = ctx.group()
        if group is not None:
            if ctx.partial:
                group.fold_partial(grads)
            else:
                group.post_backward(grads)
        return None, None, None
