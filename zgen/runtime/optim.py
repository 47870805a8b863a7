"""The optimizer over the units' shards: torch's fused AdamW, the split-master update, or any torch optimizer.

Each steps one unit at a time (the engine calls them in forward order on the
optimizer stream) and takes the step's averaging, clipping and loss-scale
factor as a device tensor that every gradient is divided by; the two Adam
paths do that inside their kernel, so no pass over the gradients is spent
on it. `state(u)` gives a unit's optimizer state for checkpoints: 1-D
tensors laid out like the shard (element-wise state) and 0-dim ones
(scalars such as `step`); `load_state(u, state)` puts it back.

`TorchOptimizer` steps any `torch.optim.Optimizer` (a client's, built by its
factory from the flat fp32 masters, or a config optimizer: Lion, or a
torch.optim class by name, as DeepSpeed does). An element-wise optimizer
(SGD, Adagrad, Lion, Adam, RMSprop, ...) computes on flat shards what it
computes on the parameters; one with per-tensor norms (LAMB, Adafactor)
would see shards instead of tensors.
"""

from __future__ import annotations

from typing import Callable

import torch

from zgen.errors import ZgenError

from . import split
from .lion import Lion
from .config import RuntimeConfig
from .unit import UnitState

__all__ = ["TorchAdamW", "SplitAdamW", "TorchOptimizer", "build_optimizer", "OptimizerFactory"]

OptimizerFactory = Callable[[list[torch.Tensor]], torch.optim.Optimizer]


class TorchAdamW:
    """`torch.optim.AdamW` (fused) over the flat fp32 master shards."""

    def __init__(self, units: list[UnitState], config: RuntimeConfig) -> None:
        cls = torch.optim.AdamW if config.optimizer == "adamw" else torch.optim.Adam
        self.torch = cls(
            [u.master for u in units], lr=config.lr, betas=config.betas, eps=config.eps,
            weight_decay=config.weight_decay, fused=True,
        )

    def state(self, u: UnitState) -> dict:
        """`u`'s state: `exp_avg`, `exp_avg_sq` (like the shard) and `step`; `{}` before its first step."""
        return self.torch.state.get(u.master, {})

    def step_unit(self, u: UnitState, grad: torch.Tensor, grad_scale: torch.Tensor, lr: float) -> None:
        for group in self.torch.param_groups:
            group["lr"] = lr
        self.torch.grad_scale = grad_scale
        u.master.grad = grad
        self.torch.step()
        u.master.grad = None

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
        """`u`'s state: `exp_avg`, `exp_avg_sq` (like the shard) and `step`; `{}` before its first step."""
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


class TorchOptimizer:
    """Any `torch.optim.Optimizer` over the flat fp32 master shards, stepped one unit at a time."""

    def __init__(self, units: list[UnitState], optimizer: torch.optim.Optimizer, scheduled: bool) -> None:
        masters = {id(u.master) for u in units}
        given = [p for g in optimizer.param_groups for p in g["params"]]
        if len(given) != len(masters) or any(id(p) not in masters for p in given):
            raise ZgenError(
                "the optimizer factory must build its optimizer over exactly the tensors it is given",
                help="write `optimizer=lambda params: torch.optim.SGD(params, lr=...)`",
            )
        self.torch = optimizer
        self.scheduled = scheduled  # the config's scheduler sets the learning rate; else the optimizer's own

    def step_unit(self, u: UnitState, grad: torch.Tensor, grad_scale: torch.Tensor, lr: float) -> None:
        """Step `u`'s master with `grad / grad_scale` (the other units have no gradient, so are skipped)."""
        if self.scheduled:
            for group in self.torch.param_groups:
                group["lr"] = lr
        u.master.grad = grad.div_(grad_scale)
        self.torch.step()
        u.master.grad = None

    def state(self, u: UnitState) -> dict:
        """`u`'s state as the optimizer keeps it (tensors like the shard, and 0-dim scalars)."""
        return {k: v if isinstance(v, torch.Tensor) else torch.tensor(float(v))
                for k, v in self.torch.state.get(u.master, {}).items()}

    def load_state(self, u: UnitState, state: dict | None) -> None:
        """Set `u`'s state from a checkpoint (`state()`'s keys), or clear it (None)."""
        if state is None:
            self.torch.state.pop(u.master, None)
            return
        dev = u.master.device
        self.torch.state[u.master] = {k: v.to(dev) for k, v in state.items()}


def build_optimizer(units: list[UnitState], config: RuntimeConfig, factory: OptimizerFactory | None = None):
    """The optimizer the config (or the client's factory) asks for, over `units`' shards."""
    if factory is not None:
        return TorchOptimizer(units, factory([u.master for u in units]), config.scheduler is not None)
    if config.optimizer in ("adam", "adamw"):
        if units and units[0].split:
            return SplitAdamW(units, config)
        return TorchAdamW(units, config)
    masters = [u.master for u in units]
    params = dict(config.optimizer_params)
    if config.optimizer == "lion":
        cls = Lion
    else:
        name = config.optimizer.removeprefix("torch:")
        cls = getattr(torch.optim, name, None)
        if not (isinstance(cls, type) and issubclass(cls, torch.optim.Optimizer)):
            raise ZgenError(f"`optimizer.type` {name!r} is neither an optimizer zgen.runtime implements nor a "
                            "torch.optim class", help="use AdamW, Adam, Lion, SGD, Adagrad, ...")
    if "betas" in params:
        params["betas"] = tuple(params["betas"])
    try:
        optimizer = cls(masters, **params)
    except (TypeError, ValueError) as e:
        raise ZgenError(f"`optimizer.params` do not fit {cls.__name__}: {e}", help="see the optimizer's documentation") from None
    return TorchOptimizer(units, optimizer, True)
