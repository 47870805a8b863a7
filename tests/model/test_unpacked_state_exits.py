"""A trainer's patience kept on `self` and reset in an unpacking assignment under a test on its own validation
metric (`if dev_metric > self.best: self.best_e, self.patience, self.best = epoch, n, dev_metric`), then tested to
stop training: the stop follows this rank's data (ZG204), also when the metric comes out of a tuple the evaluation
returns. Reset on a setting, the stop is every rank's."""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

SOURCE = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(1024, 1024)

    def forward(self, x):
        return self.fc(x)


class Parser:
    def __init__(self):
        self.model = Net()
        self.best_metric = 0.0
        self.patience = 5

    def _train(self, loader):
        for x in loader:
            self.model(x).sum().backward()

    def _evaluate(self, loader):
        total = 0.0
        for x in loader:
            total += self.model(x).sum().item()
        return total, total

    def train(self, train_loader, dev_loader, epochs, patience=5, warmup=2):
        for epoch in range(epochs):
            self._train(train_loader)
            {evaluated} = self._evaluate(dev_loader)
            self.patience -= 1
            if {test}:
                self.best_e, self.patience, self.best_metric = epoch, patience, dev_metric
            if self.patience < 1:
                break
"""


def codes(evaluated: str, test: str) -> list[str]:
    source = textwrap.dedent(SOURCE).format(evaluated=evaluated, test=test)
    return sorted(f.code for f in check_source("m.py", source) if f.code.startswith("ZG2"))


@pytest.mark.parametrize("evaluated", ["loss, dev_metric", "dev_metric"])
def test_patience_reset_on_this_ranks_metric(evaluated):
    assert codes(evaluated, "dev_metric > self.best_metric") == ["ZG204"]


def test_patience_reset_on_a_setting():
    assert codes("loss, dev_metric", "epoch < warmup") == []


STOPPER = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(1024, 1024)

    def forward(self, x):
        return self.fc(x)


class EarlyStopper:
    def __init__(self, patience):
        self.patience, self.bad, self.best = patience, 0, None

    def check_loss(self, model, loss):
        if self.best is None or loss < self.best:
            self.best, self.bad = loss, 0
            return True
        self.bad += 1
        return self.bad < self.patience


def validate(loader, model):
    return sum(model(x).sum().item() for x in loader)


def train(model: Net, loader, val_loader, epochs, patience=None):
    es = None
    if patience:
        es = EarlyStopper(patience)
    for epoch in range(epochs):
        for x in loader:
            model(x).sum().backward()
        valid = validate(val_loader, model)
        if es:
            if not es.check_loss(model, valid):
                break
"""


def test_the_stop_is_reported_at_the_stoppers_verdict_not_at_whether_there_is_a_stopper():
    found = [(f.code, f.line) for f in check_source("m.py", STOPPER) if f.code.startswith("ZG2")]
    verdict = STOPPER.splitlines().index("            if not es.check_loss(model, valid):") + 1
    assert found == [("ZG204", verdict)]
