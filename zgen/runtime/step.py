"""The optimizer step of one engine: every unit's update at the accumulation boundary, and the step counters.

`Stepper.step()` runs on the optimizer stream once the main stream's work is
queued: the scaler turns the units' squared gradient norms into one
device-side divisor (the 1/(world x accumulation) average, the clipping
factor and the fp16 loss scale), then each unit with gradients is updated
in forward order (the persistent pseudo-unit first) and drops its
gradients. Units are updated in the order their next forward gathers them,
so the next forward's first gathers can start behind the first updates.

Under optimizer offload, where the divisor does not depend on the gradients
(no clipping, no fp16: `StepScaler.divisor_is_fixed`) and the learning rate is
the config's, a unit's update starts in the backward of the window's last
micro-step, as soon as its gradient is final (`start_early`, the group
context's `early` callback), on the reduce stream behind the fold; the step
then updates the units not started yet, computes the norm as before
(`last_grad_norm`, and the ranks' all-reduce of it), and has the host thread
run what is still queued in forward order. The engine's first window runs
as before and watches: if any unit is folded into after its post-backward
on the last micro-step (a reentrant checkpoint around part of a unit, two
forwards or two backwards per micro-step), updates never start early.
The engine decides when (`Engine.step`); the counters and the scaler's state
go into checkpoints (`counters`, `load_counters`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import torch

from zgen.errors import ZgenError

from . import comm
from .config import RuntimeConfig
from .group import GroupContext, UnitGroup
from .offload import OffloadedOptimizer
from .optim import OptimizerFactory, TorchOptimizer, build_optimizer
from .scaler import StepScaler

__all__ = ["Stepper", "step_order"]

U = TypeVar("U")


def step_order(persistent: U | None, units: Sequence[U], forward_order: Sequence[str],
               module: Callable[[U], str | None] = lambda g: g.bound.module_name) -> list[U]:
    """The persistent pseudo-unit, then the units in the order their forward first runs, then any the forward skips.

    `units` are `UnitGroup`s, or anything with a `label` whose module `module` names (the engine orders the plan's
    bound units with it before their storage exists, to decide a partial offload).
    """
    by_module = {module(g): g for g in units}
    order = [persistent] if persistent is not None else []
    seen = {g.label for g in order}
    for m in forward_order:
        g = by_module[m]
        if g.label not in seen:
            order.append(g)
            seen.add(g.label)
    return order + [g for g in units if g.label not in seen]


class Stepper:
    """The optimizer over the units' shards, the scaler, and the count of optimizer steps."""

    def __init__(self, order: list[UnitGroup], config: RuntimeConfig, world_size: int, device: torch.device,
                 ctx: GroupContext, factory: OptimizerFactory | None = None) -> None:
        self.order = order
        self.ctx = ctx
        self.streams: comm.Streams = ctx.streams
        host = [g.shards for g in order if g.shards.offload]
        if host:
            kept = [g.shards for g in order if not g.shards.offload]  # partial offload: `offload_optimizer.ratio`
            self.optimizer = OffloadedOptimizer(build_optimizer(host, config, factory), device, config.pin_memory,
                                                host[0].lp.dtype, build_optimizer(kept, config, factory) if kept else None)
        else:
            self.optimizer = build_optimizer([g.shards for g in order], config, factory)
        self.scaler = StepScaler(config, world_size, device, self.streams)
        self.global_steps = 0
        inner = getattr(self.optimizer, "inner", None)
        # Early updates (see the module docstring): offloaded, a divisor known in advance, the config's learning rate
        # (a client's optimizer with its own may have it changed between the backward and the step).
        self._early_ok = (isinstance(self.optimizer, OffloadedOptimizer) and self.scaler.divisor_is_fixed
                          and not (isinstance(inner, TorchOptimizer) and not inner.scheduled))
        self._early_divisor: torch.Tensor | None = None
        ctx.early, ctx.late = None, False  # the first window runs as before and watches (`step`)

    def start_early(self, g: UnitGroup) -> None:
        """Start `g`'s update now: its gradient is final (post-backward on the window's last micro-step)."""
        s = self.streams
        with s.on(s.reduce):  # behind the fold of `g`'s gradient
            if self._early_divisor is None:
                self._early_divisor = self.scaler.fixed_divisor()
            g.apply_update(self.optimizer, self._early_divisor, self.scaler.lr(self.global_steps))
        g.started = True

    def step(self) -> None:
        """Update every unit that has gradients (call at the accumulation boundary, after the backward)."""
        stepped = [g for g in self.order if g.has_grad]
        if not stepped:
            raise ZgenError(
                "engine.step() at an accumulation boundary found no gradients",
                help="call engine.backward(loss) after each forward and before engine.step()",
            )
        s = self.streams
        s.wait(s.optim, s.record(s.main))
        with s.on(s.optim):
            divisor, skip = self.scaler.divisor([g.norm_sq for g in stepped if g.norm_sq is not None])
            if not skip:
                lr = self.scaler.lr(self.global_steps)
                for g in stepped:
                    if not g.started:
                        g.apply_update(self.optimizer, divisor, lr)
                if isinstance(self.optimizer, OffloadedOptimizer):  # what the host has not begun: forward order
                    self.optimizer.prioritize([g.label for g in self.order])
            for g in stepped:
                g.end_step()
        if not skip:
            self.global_steps += 1
        self._early_divisor = None
        if self.ctx.late:
            self._early_ok = False
        self.ctx.early, self.ctx.late = (self.start_early if self._early_ok else None), False

    def lr(self) -> list[float]:
        """The learning rate the next optimizer step will use (one entry, as DeepSpeed's list)."""
        inner = getattr(self.optimizer, "inner", self.optimizer)
        if isinstance(inner, TorchOptimizer) and not inner.scheduled:  # a client's optimizer keeps its own
            return [float(inner.torch.param_groups[0]["lr"])]
        return [self.scaler.lr(self.global_steps)]

    def synchronize(self) -> None:
        """Wait for updates still running on the host (optimizer offload)."""
        if isinstance(self.optimizer, OffloadedOptimizer):
            self.optimizer.synchronize()

    def counters(self) -> dict:
        """Step counters and scaler state, as plain numbers (saved with a checkpoint)."""
        return {"global_steps": self.global_steps, "micro_steps": self.ctx.micro_steps, **self.scaler.state_dict()}

    def load_counters(self, state: dict) -> None:
        """Restore `counters()`'s values."""
        self.global_steps, self.ctx.micro_steps = int(state["global_steps"]), int(state["micro_steps"])
        self.scaler.load_state_dict(state)
