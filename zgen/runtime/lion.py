"""Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms"), as DeepSpeed's config names it.

The update is the sign of an interpolation of momentum and gradient, so every
element moves by exactly `lr` (plus decoupled weight decay):

    c = beta1 * m + (1 - beta1) * g
    p = p * (1 - lr * weight_decay) - lr * sign(c)
    m = beta2 * m + (1 - beta2) * g

Element-wise, so stepping flat shards equals stepping the parameters.
"""

from __future__ import annotations

import torch

__all__ = ["Lion"]


class Lion(torch.optim.Optimizer):
    """Lion with decoupled weight decay; state per parameter: `exp_avg` (the momentum)."""

    def __init__(self, params, lr: float = 1e-4, betas: tuple[float, float] = (0.9, 0.99), weight_decay: float = 0.0):
        if lr <= 0 or not 0 <= betas[0] < 1 or not 0 <= betas[1] < 1 or weight_decay < 0:
            raise ValueError(f"invalid Lion settings: lr={lr}, betas={betas}, weight_decay={weight_decay}")
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "weight_decay": weight_decay})

    @torch.no_grad()
    def step(self, closure=None):
        """One update of every parameter that has a gradient."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            beta1, beta2 = group["betas"]
            lr, wd = group["lr"], group["weight_decay"]
            grads = [p.grad for p in params]
            moms = []
            for p in params:
                st = self.state[p]
                if "exp_avg" not in st:
                    st["exp_avg"] = torch.zeros_like(p)
                moms.append(st["exp_avg"])
            if wd:
                torch._foreach_mul_(params, 1 - lr * wd)
            update = torch._foreach_lerp(moms, grads, 1 - beta1)
            torch._foreach_sign_(update)
            torch._foreach_add_(params, update, alpha=-lr)
            torch._foreach_lerp_(moms, grads, 1 - beta2)
        return loss
