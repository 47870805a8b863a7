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

from zgen.deepspeed_defaults import default

__all__ = ["DEFAULT_PERSISTENCE_THRESHOLD", "GATHER_CONTEXTS", "stays_gathered"]

# DeepSpeed's default `stage3_param_persistence_threshold` (1e5 elements).
DEFAULT_PERSISTENCE_THRESHOLD: int = default(  # type: ignore[assignment]
    "zero_optimization.stage3_param_persistence_threshold"
)

# Context managers that gather partitioned parameters for their body (DeepSpeed's, and FSDP's counterpart).
GATHER_CONTEXTS = frozenset({"GatheredParameters", "gather_params", "summon_full_params"})


def stays_gathered(numel: int, threshold: int = DEFAULT_PERSISTENCE_THRESHOLD) -> bool:
    """Does ZeRO-3 keep a parameter of `numel` elements gathered everywhere (at or below the threshold)?"""
    return numel <= threshold
