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


def test_partial_offload_keeps_the_units_stepped_first_that_fit_and_its_ratio_round_trips():
    from zgen.zero_policy import optimizer_on_device, ratio_keeping

    units = [("<persistent>", 10), ("", 1000), ("layers.0", 200), ("layers.1", 200), ("layers.2", 200)]
    total = sum(n for _, n in units)
    assert optimizer_on_device(units, 1.0) == frozenset()
    assert optimizer_on_device(units, 0.0) == {label for label, _ in units}
    # room for 500 of the 1610: the root (1000) does not fit and is offloaded; the blocks after it still may stay
    kept = optimizer_on_device(units, 1 - 500 / total)
    assert kept == {"<persistent>", "layers.0", "layers.1"}
    assert optimizer_on_device(units, ratio_keeping(units, sorted(kept))) == kept
    assert optimizer_on_device(units, 1 - 1100 / total) == {"<persistent>", ""}  # 90 left: no block fits
