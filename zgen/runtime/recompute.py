"""Activation checkpointing of whole units, chosen by the plan, without touching the model's code.

A unit whose plan entry says `recompute` gets its module's `forward` replaced
on the instance by a `Recomputed` wrapper that runs the original forward under
`torch.utils.checkpoint` (non-reentrant): autograd keeps only the unit's
inputs, and the backward runs the forward again just before the unit's own
backward. The engine's unit hooks sit around the module call, outside the
wrapper, so the schedule is unchanged: the recomputation reads the weights the
unit's pre-backward installed (`Engine._install_backward`), and the gradients
still reach the views of the forward (non-reentrant checkpointing recomputes
the saved tensors only, the graph stays the forward's).

`Engine.compile()` compiles what the wrapper calls (`inner`) and keeps the
checkpoint eager around it, as a user's `checkpoint(compiled_block, x)` would:
the recomputation then runs the compiled forward again.
"""

from __future__ import annotations

from typing import Any, Callable

from torch import nn
from torch.utils.checkpoint import checkpoint

__all__ = ["Recomputed", "recompute_module"]


class Recomputed:
    """The forward of one module under non-reentrant activation checkpointing; `inner` is what it runs."""

    __slots__ = ("inner",)

    def __init__(self, inner: Callable[..., Any]) -> None:
        self.inner = inner

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return checkpoint(self.inner, *args, use_reentrant=False, **kwargs)


def recompute_module(module: nn.Module) -> Recomputed:
    """Put `module`'s forward (its own, or a wrapper set on the instance) under checkpointing; idempotent."""
    own = module.__dict__.get("forward")
    if isinstance(own, Recomputed):
        return own
    wrapper = Recomputed(own if own is not None else module.forward)
    module.forward = wrapper
    return wrapper
