"""The step's scaling: fp16 loss scale, gradient clipping, averaging and the learning rate.

At the accumulation boundary the engine hands the units' squared gradient
norms to `StepScaler.divisor`, which returns one device tensor that every
gradient is divided by in the optimizer kernel: the 1/(world x accumulation)
average, the clipping coefficient and the fp16 loss scale together, so no
pass over the gradients is spent on scaling and the host never waits for
the norm (except for fp16's overflow check, a host sync as in DeepSpeed).
"""

from __future__ import annotations

import torch

from . import comm
from .config import RuntimeConfig

__all__ = ["StepScaler"]


class StepScaler:
    """Loss scale, clipping and learning rate of one engine, with a `state_dict` for checkpoints."""

    def __init__(self, config: RuntimeConfig, world_size: int, device: torch.device, streams: comm.Streams) -> None:
        self.config = config
        self.world_size = world_size
        self.device = device
        self.streams = streams
        ls = config.loss_scale
        if config.precision != "fp16":
            self.loss_scale = 1.0
        else:
            self.loss_scale = ls.static if ls.static > 0 else float(2**ls.initial_scale_power)
        self.good_steps = 0
        self.skipped = 0
        self._last_norm: torch.Tensor | None = None
        self._last_norm_event = None

    def scale_loss(self, loss: torch.Tensor) -> torch.Tensor:
        """The tensor to backpropagate: `loss` times the fp16 loss scale (unchanged otherwise)."""
        if self.config.precision == "fp16":
            return loss.float() * self.loss_scale
        return loss

    def lr(self, step: int) -> float:
        """The learning rate of optimizer step `step` (counted from 0)."""
        # DeepSpeed steps its scheduler after the optimizer, so step k runs with the scheduler at k - 1.
        sched = self.config.scheduler
        return self.config.lr if sched is None else sched.lr(step - 1, self.config.lr)

    def divisor(self, norms_sq: list[torch.Tensor]) -> tuple[torch.Tensor, bool]:
        """The gradient divisor (average, clip, loss scale) from the units' squared norms; and whether to skip.

        Collective above world size 1 (the squared norms are summed over ranks). Runs on
        the current stream (the optimizer's). A skip (fp16 overflow) is counted here.
        """
        total = torch.stack(norms_sq).sum() if norms_sq else torch.zeros((), device=self.device)
        if self.world_size > 1:
            comm.all_reduce_sum(total)
        denom = self._denominator()
        norm = total.sqrt() / denom
        self._last_norm = norm
        self._last_norm_event = self.streams.record(self.streams.optim)
        divisor = torch.full((), denom, dtype=torch.float32, device=self.device)
        if self.config.gradient_clipping > 0:
            coef = torch.clamp(self.config.gradient_clipping / (norm + 1e-6), max=1.0)
            divisor = divisor / coef
        if self.config.precision != "fp16":
            return divisor, False
        overflow = not bool(torch.isfinite(total))  # fp16 only: a host sync, as DeepSpeed does
        self._update_scale(overflow)
        if overflow:
            self.skipped += 1
        return divisor, overflow

    @property
    def divisor_is_fixed(self) -> bool:
        """The divisor does not depend on the gradients: no clipping, no fp16 loss scale."""
        return self.config.gradient_clipping <= 0 and self.config.precision != "fp16"

    def fixed_divisor(self) -> torch.Tensor:
        """The divisor before the gradients are all in (needs `divisor_is_fixed`), on the current stream.

        The average's denominator alone: the tensor `divisor` returns then (same value, same bits).
        """
        assert self.divisor_is_fixed
        return torch.full((), self._denominator(), dtype=torch.float32, device=self.device)

    def _denominator(self) -> float:
        return float(self.world_size * self.config.gradient_accumulation_steps) * self.loss_scale

    def _update_scale(self, overflow: bool) -> None:
        ls = self.config.loss_scale
        if ls.static > 0:
            return
        if overflow:
            self.loss_scale = max(self.loss_scale / 2, ls.min_scale)
            self.good_steps = 0
        else:
            self.good_steps += 1
            if self.good_steps % ls.window == 0:
                self.loss_scale *= 2

    @property
    def last_norm(self) -> float | None:
        """Global gradient norm (before clipping) of the last step; None before the first."""
        if self._last_norm is None:
            return None
        if self._last_norm_event is not None:
            self._last_norm_event.synchronize()
        return float(self._last_norm)

    def state_dict(self) -> dict:
        """What a checkpoint keeps (plain Python numbers)."""
        return {"skipped": self.skipped, "loss_scale": float(self.loss_scale), "good_steps": self.good_steps}

    def load_state_dict(self, state: dict) -> None:
        """Restore `state_dict()`'s values."""
        self.skipped = int(state["skipped"])
        self.loss_scale = float(state["loss_scale"])
        self.good_steps = int(state["good_steps"])
