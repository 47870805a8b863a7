"""The strict sections derived from DeepSpeed's pydantic models, and zgen's hand-written schema against them."""

from __future__ import annotations

import subprocess
import sys

import pytest

from zgen.config.deepspeed_models import MODELS, VERSION
from zgen.config.schema import parse_version, schema_for


def _names(section) -> set[str]:
    return ({n for k in section.keys if not k.removed for n in (k.name, *k.aliases)}
            | {s.name for s in section.sections if not s.removed})


def _compare(section, fields: dict, path: str, out: list[str]) -> None:
    want = {n for name, f in fields.items() for n in (name, *f["aliases"])}
    have = _names(section)
    if want != have:
        out.append(f"{path}: only zgen {sorted(have - want)}, only DeepSpeed {sorted(want - have)}")
    for name, f in fields.items():
        if f["kind"] == "model" and name in section.section_index:
            _compare(section.section_index[name], f["fields"], f"{path}.{name}", out)


def test_every_strict_section_has_exactly_deepspeeds_keys():
    schema = schema_for(parse_version(VERSION))
    differences: list[str] = []
    for path, model in MODELS.items():
        node = schema
        for part in path.split("."):
            node = node.section_index[part]
        assert node.mode == "strict", path
        _compare(node, model["fields"], path, differences)
    assert not differences, "\n".join(differences)


def test_the_sections_found_include_the_known_strict_ones():
    assert {"zero_optimization", "fp16", "bf16", "compile", "comms_logger", "tensorboard", "wandb",
            "timers.throughput"} <= set(MODELS)
    assert not {"aio", "data_efficiency", "checkpoint", "activation_checkpointing"} & set(MODELS)


@pytest.mark.slow
def test_the_committed_data_matches_the_installed_deepspeed(repo):
    pytest.importorskip("deepspeed")
    done = subprocess.run([sys.executable, "bench/configs/derive_models.py", "--check"], cwd=repo,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
