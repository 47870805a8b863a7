"""The phase of the step an engine is in; its hooks act on it."""

from __future__ import annotations

import enum

__all__ = ["TrainingState"]


class TrainingState(enum.Enum):
    """Where the engine stands between `engine(...)`, `engine.backward()` and `engine.step()`.

    * `IDLE`: outside every forward and backward.
    * `FORWARD`: inside the root module's forward with gradients enabled; units
      run in the plan's order and register their pre-backward hooks.
    * `FORWARD_NO_GRAD`: the same under `torch.no_grad()`; every unit is freed
      at the end and no backward follows.
    * `PRE_BACKWARD`: a forward with gradients has finished; its backward is
      still to come (through `engine.backward`, or the caller's own
      `loss.backward()`, which `engine.step()` then finalises).
    * `BACKWARD`: inside `engine.backward()`. A unit's forward hook firing now
      is a recomputation (activation checkpointing): same weights, no schedule.
    """

    IDLE = "idle"
    FORWARD = "forward"
    FORWARD_NO_GRAD = "forward_no_grad"
    PRE_BACKWARD = "pre_backward"
    BACKWARD = "backward"
