"""A model handed, under a rank test, to an evaluation of a library zgen does not read (`evaluate(model, loader)`,
`evaluator.run(model)`) runs on that rank alone: ZG201. The function's or the object's name says it runs the model;
a name that says it records or shows the model (`log_model`, `wandb.watch`) does not, nor does the same call made
on every rank."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
import torch.distributed as dist
from somewhere.eval import evaluate, log_model
import wandb


def train_epoch(model, loader, optimizer, evaluator, step):
    for batch in loader:
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        step += 1
        if {test}:
            {call}
    return step
"""


def codes(call: str, test: str = "dist.get_rank() == 0 and step % 100 == 0") -> list[str]:
    found = check_source("train.py", textwrap.dedent(SOURCE.format(test=test, call=call)))
    return [f.code for f in found if f.code.startswith("ZG2")]


def test_an_evaluation_function_of_another_library_on_rank_zero():
    assert codes("evaluate(model, loader)") == ["ZG201"]


def test_an_evaluator_object_of_no_class_we_read_on_rank_zero():
    assert codes("evaluator.run(model)") == ["ZG201"]
    assert codes("evaluator.run(model, loader)") == ["ZG201"]


def test_a_validation_step_named_so():
    assert codes("run_validation(model)").count("ZG201") == 1


def test_calls_that_record_or_show_the_model_are_no_run():
    assert codes("log_model(model)") == []
    assert codes("wandb.watch(model)") == []
    assert codes("evaluator.save_results(model)") == []


def test_the_same_evaluation_on_every_rank_is_no_finding():
    assert codes("evaluate(model, loader)", test="step % 100 == 0") == []


def test_an_evaluation_handed_no_model_is_no_finding():
    assert codes("evaluate(step, loader)") == []
