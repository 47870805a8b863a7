"""What a method's name says of a model of no class zgen reads (`runs.runs_unread`, `runs.records`): a name that
keeps or reports the model (`save_json`, `log_metrics`) runs nothing; `log` as the logarithm of a computed quantity
(`log_prob(x)`, `log_likelihood`) runs the model."""

from __future__ import annotations

import pytest

from zgen.model.analysis.runs import records, runs_unread


@pytest.mark.parametrize("name", ["log_prob", "log_likelihood", "log_density", "log_abs_det_jacobian", "sample"])
def test_computing_names_run_the_model(name):
    assert runs_unread(name) and not records(name)


@pytest.mark.parametrize("name", ["log_metrics", "save_json", "print_summary", "log", "push_to_hub"])
def test_recording_names_run_nothing(name):
    assert records(name) and not runs_unread(name)
