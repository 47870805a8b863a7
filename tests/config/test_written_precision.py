"""The precision a config asks for: read before the check (`written_precision`) as the check resolves it."""

from __future__ import annotations

import json

import pytest

from zgen.config import check_config
from zgen.config.resolved import written_precision
from zgen.launch import LaunchFacts, ModelShape

FACTS = LaunchFacts(world_size=1, consumer="zgen", model=ModelShape(params=1000))


@pytest.mark.parametrize(
    "sections",
    [
        {},
        {"bf16": {"enabled": True}},
        {"bfloat16": {"enabled": True}},  # DeepSpeed's old name for the section
        {"bf16": None, "bfloat16": {"enabled": True}},  # a null `bf16` falls back to it
        {"bf16": {"enabled": False}, "bfloat16": {"enabled": True}},  # a present `bf16` wins
        {"bf16": {"enabled": "auto"}},  # zgen fills "auto" as off
        {"fp16": {"enabled": True}},
        {"fp16": {"enabled": True}, "bf16": {"enabled": True}},
    ],
)
def test_written_precision_is_the_resolved_one(sections):
    config = {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3}, **sections}
    report = check_config("ds_config.json", json.dumps(config).encode(), FACTS)
    assert report.resolved is not None
    assert written_precision(config) == report.resolved.precision
