"""What ZeRO stage 3 keeps gathered: the one rule the static check, the planner, the runtime and the memory model share.

DeepSpeed keeps a parameter whole on every rank for the whole step when it
has at most `stage3_param_persistence_threshold` elements
(`DeepSpeedZeRoOffload.mark_persistent_parameters`: `param.ds_numel <=
param_threshold`); every other parameter is partitioned and gathered only
while its own module's forward or backward runs, or inside a gather context
(`deepspeed.zero.GatheredParameters`). Torch-free and small on purpose: the
emitted training script imports the runtime, which imports this.
"""

from __future__ import annotations

from collections.abc import Sequence

from zgen.deepspeed_defaults import default

__all__ = ["DEFAULT_PERSISTENCE_THRESHOLD", "GATHER_CONTEXTS", "stays_gathered", "optimizer_on_device",
           "ratio_keeping"]

# DeepSpeed's default `stage3_param_persistence_threshold` (1e5 elements).
DEFAULT_PERSISTENCE_THRESHOLD: int = default(  # type: ignore[assignment]
    "zero_optimization.stage3_param_persistence_threshold"
)

# Context managers that gather partitioned parameters for their body (DeepSpeed's, and FSDP's counterpart).
GATHER_CONTEXTS = frozenset({"GatheredParameters", "gather_params", "summon_full_params"})


def stays_gathered(numel: int, threshold: int = DEFAULT_PERSISTENCE_THRESHOLD) -> bool:
    """Does ZeRO-3 keep a parameter of `numel` elements gathered everywhere (at or below the threshold)?"""
    return numel <= threshold


def optimizer_on_device(units: Sequence[tuple[str, int]], ratio: float) -> frozenset[str]:
    """The units whose optimizer stays on the GPU under `offload_optimizer.ratio` (DeepSpeed's partial offload).

    `ratio` is the share of the parameters whose optimizer state is offloaded to the
    host. `units` are (label, parameters) in the order the optimizer steps them (the
    persistent pseudo-unit, then the order the forward first runs them). Walking them
    in that order, a unit stays on the GPU when its parameters fit in what is left of
    `1 - ratio` of the total, and is offloaded otherwise. The units stepped first are
    the ones whose gradients the backward makes last and whose weights the next
    forward needs first, so a host update there would hold up both ends of the step.
    """
    total = sum(n for _, n in units)
    room = (1.0 - ratio) * total * (1 + 1e-9)
    kept: list[str] = []
    for label, n in units:
        if n <= room:
            room -= n
            kept.append(label)
    return frozenset(kept)


def ratio_keeping(units: Sequence[tuple[str, int]], kept: Sequence[str]) -> float:
    """The `offload_optimizer.ratio` under which `optimizer_on_device` keeps `kept`, a set it chose itself for some
    larger room (its walk, given exactly their parameters as room, takes the same units and skips the same)."""
    total = sum(n for _, n in units)
    chosen = set(kept)
    return 1.0 - sum(n for label, n in units if label in chosen) / total if total else 1.0
