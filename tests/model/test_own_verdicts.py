"""A rank that stops, raises or retries on a verdict about its own values leaves its peers waiting (ZG204):
* a loop whose exit asks a method of the trainer (`while not self._converged(epoch, patience)`) that decides on an
  attribute the loop keeps from a validation pass (`self._val_loss = self._validate(loader)`);
* a `raise` on a number this rank computed compared with a constant (`if valid == 0.0: raise`);
* a retry loop that leaves through a flag its `try` body sets once the model ran (`while flag is False: try: out =
  self.model(x); flag = True / except RuntimeError: batch_size //= 2`);
* an evaluator unpacked from a bundle of training modules (`model, loss, evaluator = modules`) whose methods the
  package's one evaluator class answers, running the model.
Verdicts on the epoch count, on settings, or on a value every rank agreed on are no finding, nor is a raise on an
extent (`len(batch) == 0`) or a retry of code that runs no model."""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

TRAINER = """
import torch
import torch.distributed as dist
from torch import nn


class Trainer:
    def __init__(self, net: nn.Module):
        self.net = net
        self._val_loss = float("inf")
        self._best = float("inf")
        self._bad_epochs = 0

    def train(self, loader, val_loader, max_epochs, patience):
        self.epoch = 0
        while self.epoch < max_epochs and not self._converged(self.epoch, patience):
            for x in loader:
                self.net(x).sum().backward()
            self._val_loss = self._validate(val_loader)
            self.epoch += 1

    def _validate(self, val_loader):
        total = 0.0
        with torch.no_grad():
            for x in val_loader:
                total += self.net(x).sum().item()
{reduce}
        return total

    def _converged(self, epoch, patience):
{verdict}
"""

PATIENCE = """
converged = False
if epoch == 0 or self._val_loss < self._best:
    self._best = self._val_loss
    self._bad_epochs = 0
else:
    self._bad_epochs += 1
if self._bad_epochs > patience - 1:
    converged = True
return converged
"""


def zg2(source: str) -> list[tuple[str, int]]:
    return sorted((f.code, f.line) for f in check_source("m.py", textwrap.dedent(source)) if f.code.startswith("ZG2"))


def trainer(verdict: str, reduce: str = "") -> str:
    return TRAINER.format(
        verdict=textwrap.indent(textwrap.dedent(verdict).strip("\n"), " " * 8),
        reduce=textwrap.indent(textwrap.dedent(reduce).strip("\n"), " " * 8) if reduce else "",
    )


def test_a_patience_verdict_on_the_kept_validation_loss_ends_the_loop_on_one_rank():
    assert zg2(trainer(PATIENCE)) == [("ZG204", 16)]


def test_a_verdict_on_the_epoch_count_alone_is_the_same_on_every_rank():
    assert zg2(trainer("return epoch >= patience")) == []


def test_a_patience_verdict_on_an_all_reduced_loss_is_the_same_on_every_rank():
    reduce = """
    t = torch.tensor(total)
    dist.all_reduce(t)
    total = t.item()
    """
    assert zg2(trainer(PATIENCE, reduce)) == []


TRAIN_LOOP = """
def compute_validation(loader, model):
    total = 0.0
    for x in loader:
        total += model(x).sum().item()
    return total


def train(model, loader, val_loader, epochs, lr):
    for epoch in range(epochs):
        for x in loader:
            model(x).sum().backward()
        valid = compute_validation(val_loader, model)
        if {test}:
            raise ValueError("the validation loss is zero: the validator is broken")
"""


@pytest.mark.parametrize("test", ["valid == 0.0", "valid > 1e6", "-1 >= valid"])
def test_a_raise_on_a_number_the_model_computed_stops_one_rank(test):
    assert zg2(TRAIN_LOOP.format(test=test)) == [("ZG204", 14)]


@pytest.mark.parametrize("test", ["lr == 0.0", "len(val_loader) == 0", "epochs < 1"])
def test_a_raise_on_a_setting_or_an_extent_is_no_finding(test):
    assert zg2(TRAIN_LOOP.format(test=test)) == []


RETRY = """
import torch
from torch import nn


class Embedder:
    def __init__(self, model: nn.Module, tokenizer):
        self.model = model
        self.tokenizer = tokenizer

    def encode(self, sentences, batch_size):
        flag = False
        while flag is False:
            try:
                inputs = self.tokenizer(sentences[:batch_size])
                {call}
                flag = True
            except RuntimeError:
                batch_size = batch_size * 3 // 4
        return batch_size
"""


def test_a_retry_until_a_flag_says_the_model_ran_runs_it_more_often_on_one_rank():
    found = check_source("m.py", textwrap.dedent(RETRY.format(call="outputs = self.model(inputs)")))
    assert [(f.code, f.line) for f in found if f.code.startswith("ZG2")] == [("ZG204", 16)]
    assert "runs again whenever it raises" in next(f.message for f in found if f.code == "ZG204")


def test_a_retry_of_code_that_runs_no_model_is_no_finding():
    assert zg2(RETRY.format(call="outputs = len(inputs)")) == []


BUNDLE = """
import torch


class Evaluator:
    def __init__(self, model):
        self.model = model

    def evaluate(self, batches):
        return [self.model(x) for x in batches]


def training_loop(training_modules, controller, database, tracker):
    model, loss, evaluator = training_modules
    keep_going = True
    while keep_going:
        for batch in database.make_generator("train"):
            loss(model(batch)).backward()
        metrics = {use}
        better, stopping_metric = tracker.register_metrics(metrics)
        keep_going = controller.push_epoch(better, stopping_metric)
"""


def test_an_evaluator_unpacked_from_the_training_modules_runs_the_model_it_was_built_with():
    assert zg2(BUNDLE.format(use='evaluator.evaluate(database.make_generator("valid"))')) == [("ZG204", 16)]


def test_a_stop_on_what_no_model_computed_is_no_finding():
    assert zg2(BUNDLE.format(use='database.count("valid")')) == []
