"""The one statement of what ZeRO-3 keeps gathered, shared by the check, the planner, the runtime and the memory model."""

from __future__ import annotations

from zgen.deepspeed_defaults import default
from zgen.zero_policy import DEFAULT_PERSISTENCE_THRESHOLD, stays_gathered


def test_the_threshold_is_inclusive_like_deepspeeds():
    # DeepSpeedZeRoOffload.mark_persistent_parameters: `if param.ds_numel <= param_threshold`
    assert stays_gathered(DEFAULT_PERSISTENCE_THRESHOLD)
    assert not stays_gathered(DEFAULT_PERSISTENCE_THRESHOLD + 1)
    assert stays_gathered(0, threshold=0) and not stays_gathered(1, threshold=0)


def test_the_default_is_deepspeeds_table_value():
    assert DEFAULT_PERSISTENCE_THRESHOLD == default("zero_optimization.stage3_param_persistence_threshold") == 100_000
