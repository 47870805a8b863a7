"""The optimizer step of one engine: every unit's update at the accumulation boundary, and the step counters.

`Stepper.step()` runs on the optimizer stream once the main stream's work is
queued: the scaler turns the units' squared gradient norms into one
device-side divisor (the 1/(world x accumulation) average, the clipping
factor and the fp16 loss scale), then each unit with gradients is updated
in forward order (the persistent pseudo-unit first) and drops its
gradients. Units are updated in the order their next forward gathers them,
so the next forward's first gathers can start behind the first updates.
The engine decides when (`Engine.step`); the counters and the scaler's state
go into checkpoints (`counters`, `load_counters`).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from zgen.errors import ZgenError

from . import comm
from .config import RuntimeConfig
from .group import GroupContext, UnitGroup
from .offload import OffloadedOptimizer
from .optim import OptimizerFactory, TorchOptimizer, build_optimizer
from .scaler import StepScaler

__all__ = ["Stepper", "step_order"]


def step_order(persistent: UnitGroup | None, units: Sequence[UnitGroup], forward_order: Sequence[str]) -> list[UnitGroup]:
    """The persistent pseudo-unit, then the units in the order their forward first runs, then any the forward skips."""
    by_module = {g.bound.module_name: g for g in units}
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
        self.optimizer = build_optimizer([g.shards for g in order], config, factory)
        if config.offload_optimizer:
            self.optimizer = OffloadedOptimizer(self.optimizer, device, config.pin_memory)
        self.scaler = StepScaler(config, world_size, device, self.streams)
        self.global_steps = 0

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
                    g.apply_update(self.optimizer, divisor, lr)
            for g in stepped:
                g.end_step()
        if not skip:
            self.global_steps += 1

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
