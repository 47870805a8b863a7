"""A helper handed the model that a data decision runs only on its `else` side (`if "cache" in batch: out =
batch["cache"]` / `else: out = run(model_T, batch)`) is skipped outright on the ranks whose batch holds the cache
(ZG203), as one on the `if` side is; a helper on both sides is a choice of how, not whether. Models named with a
role suffix (`model_T`, `net_g`) are models."""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

SOURCE = """
import torch


def run(model, batch):
    return model(batch["input_ids"])


def outputs(batch, {teacher}, student_model):
    if "cache" in batch:
        results_T = {cached}
    else:
        with torch.no_grad():
            results_T = run({teacher}, batch)
    return results_T, student_model(batch["input_ids"])
"""


def codes(teacher: str, cached: str) -> list[str]:
    source = textwrap.dedent(SOURCE).format(teacher=teacher, cached=cached)
    return sorted(f.code for f in check_source("m.py", source) if f.code.startswith("ZG2"))


@pytest.mark.parametrize("teacher", ["teacher_model", "model_T", "net_t"])
def test_a_teacher_run_only_when_the_batch_holds_no_cache(teacher):
    assert codes(teacher, 'torch.as_tensor(batch["cache"])') == ["ZG203"]


def test_the_teacher_run_either_way():
    assert codes("model_T", "run(model_T, batch)") == []


SETTINGS = """
import torch


def run(model, batch):
    return model(batch["input_ids"])


def outputs(batch, params_dict, model_T):
    if "teacher_off" in params_dict:
        results_T = torch.as_tensor(params_dict["teacher_off"])
    else:
        results_T = run(model_T, batch)
    return results_T
"""


def test_a_key_of_the_settings_it_was_given_decides_for_every_rank():
    assert [f.code for f in check_source("m.py", SETTINGS) if f.code.startswith("ZG2")] == []
