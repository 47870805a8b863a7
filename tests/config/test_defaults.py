"""The one table of DeepSpeed defaults: what it holds, per release, and who reads it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from zgen.deepspeed_defaults import LATEST, default, defaults, scheduler_defaults
from zgen.config.resolved import ZeroSpec
from zgen.config.schema import schema_for


def test_defaults_that_changed_between_releases():
    assert default("gradient_clipping", (0, 19, 2)) == 0.0
    assert default("gradient_clipping", (0, 19, 3)) == 1.0
    assert default("zero_optimization.offload_param.pin_memory", (0, 19, 4)) is False
    assert default("zero_optimization.offload_param.pin_memory", LATEST) is True


def test_a_derived_key_has_no_default():
    assert default("train_batch_size") is None
    assert default("zero_optimization.overlap_comm") is None


@pytest.mark.parametrize("version", [(0, 14, 0), (0, 19, 2), LATEST])
def test_the_schema_reads_its_defaults_from_the_table(version):
    table = defaults(version)
    zero = schema_for(version).section_index["zero_optimization"]
    for key in zero.keys:
        assert key.default == table.get(f"zero_optimization.{key.name}"), key.name
    assert schema_for(version).key_index["gradient_clipping"].default == table["gradient_clipping"]


def test_spec_and_runtime_defaults_come_from_the_table():
    from zgen.runtime.config import LossScaleConfig, zero_settings

    assert ZeroSpec().prefetch_bucket_size == default("zero_optimization.stage3_prefetch_bucket_size")
    assert zero_settings(None) == (default("zero_optimization.stage3_param_persistence_threshold"),
                                   default("zero_optimization.stage3_prefetch_bucket_size"))
    assert LossScaleConfig().window == default("fp16.loss_scale_window")


def test_scheduler_defaults_differ_per_class():
    assert scheduler_defaults("WarmupLR")["warmup_max_lr"] is None
    assert scheduler_defaults("WarmupDecayLR")["warmup_max_lr"] == 0.001
    assert scheduler_defaults("OneCycle") == {}


def test_the_runtime_imports_neither_libcst_nor_z3():
    code = ("import sys, zgen.runtime, zgen.deepspeed_defaults; "
            "print('libcst' in sys.modules, 'z3' in sys.modules, 'zgen.config.schema' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False", "False"]
