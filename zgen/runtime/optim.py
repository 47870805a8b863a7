"""The optimizer over the units' shards: torch's fused AdamW, or the split-master update.

Both step one unit at a time (the engine calls them in forward order on the
optimizer stream) and take the step's averaging, clipping and loss-scale
factor as a device tensor that every gradient is divided by, so no pass over
the gradients is spent on it. Both expose the same per-unit state
(`exp_avg`, `exp_avg_sq`, `step`) for checkpoints.
"""

from __future__ import annotations

import torch

from . import split
from .config import RuntimeConfig
from .unit import UnitState

__all__ = ["TorchAdamW", "SplitAdamW", "build_optimizer"]


class TorchAdamW:
    """`torch.optim.AdamW` (fused) over the flat fp32 master shards."""

    def __init__(self, units: list[UnitState], config: RuntimeConfig) -> None:
        cls = torch.optim.AdamW if config.optimizer == "adamw" else torch.optim.Adam
        self.torch = cls(
            [u.master for u in units], lr=config.lr, betas=config.betas, eps=config.eps,
            weight_decay=config.weight_decay, fused=True,
        )

    def step_unit(self, u: UnitState, grad: torch.Tensor, grad_scale: torch.Tensor, lr: float) -> None:
        for group in self.torch.param_groups:
            group["lr"] = lr
        self.torch.grad_scale = grad_scale
        u.master.grad = grad
        self.torch.step()
        u.master.grad = None

    def state(self, u: UnitState) -> dict:
        return self.torch.state.get(u.master, {})

    def load_state(self, u: UnitState, state: dict | None) -> None:
        """Set `u`'s state from a checkpoint (`state()`'s keys), or clear it (None)."""
        if state is None:
            self.torch.state.pop(u.master, None)
            return
        self.torch.state[u.master] = {
            "step": torch.tensor(float(state["step"]), dtype=torch.float32, device=u.master.device),
            "exp_avg": state["exp_avg"],
            "exp_avg_sq": state["exp_avg_sq"],
        }


class SplitAdamW:
    """Adam(W) on split masters (`zgen.runtime.split`): one fused pass per unit, bf16 or fp32 gradients."""

    def __init__(self, units: list[UnitState], config: RuntimeConfig) -> None:
        self.config = config
        self._state: dict[str, dict] = {}

    def step_unit(self, u: UnitState, grad, grad_scale: torch.Tensor, lr: float) -> None:
        c = self.config
        st = self._state.get(u.label)
        if st is None:
            st = self._state[u.label] = {
                "exp_avg": torch.zeros(u.layout.shard, dtype=torch.float32, device=u.hi.device),
                "exp_avg_sq": torch.zeros(u.layout.shard, dtype=torch.float32, device=u.hi.device),
                "step": 0,
            }
        st["step"] += 1
        kw = dict(step=st["step"], lr=lr, beta1=c.betas[0], beta2=c.betas[1], eps=c.eps,
                  weight_decay=c.weight_decay, decoupled=c.optimizer == "adamw")
        if isinstance(grad, torch.Tensor):
            split.adamw_step(u.hi, u.lo, st["exp_avg"], st["exp_avg_sq"], grad, grad_scale, **kw)
            return
        # Per-parameter low-precision gradients (world size 1, no accumulation): each parameter's
        # slice is updated from its own gradient; alignment gaps hold zeros and never change.
        for slot, g in zip(u.layout.slots, grad):
            a, b = slot.offset, slot.end
            split.adamw_step(u.hi[a:b], u.lo[a:b], st["exp_avg"][a:b], st["exp_avg_sq"][a:b], g.reshape(-1),
                             grad_scale, **kw)

    def state(self, u: UnitState) -> dict:
        st = self._state.get(u.label)
        if st is None:
            return {}
        return {"exp_avg": st["exp_avg"], "exp_avg_sq": st["exp_avg_sq"],
                "step": torch.tensor(float(st["step"]))}

    def load_state(self, u: UnitState, state: dict | None) -> None:
        """Set `u`'s state from a checkpoint (`state()`'s keys), or clear it (None)."""
        if state is None:
            self._state.pop(u.label, None)
        else:
            self._state[u.label] = {"exp_avg": state["exp_avg"], "exp_avg_sq": state["exp_avg_sq"],
                                    "step": int(float(state["step"]))}


def build_optimizer(units: list[UnitState], config: RuntimeConfig):
    if units and units[0].split:
        return SplitAdamW(units, config)
    return TorchAdamW(units, config)
