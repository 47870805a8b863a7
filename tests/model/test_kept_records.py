"""Records a trainer keeps of what its model returned, read by another method (issue 20: early stops on a statistic).

* A trainer (a plain class holding the model) whose evaluation method runs the model and keeps the loss it saw on
  itself (`self.run_history.update_metric("eval_loss", total)`, `self.metrics["eval_loss"] = total`,
  `self.last_loss = total`), and whose training loop stops once that record stops improving: the record is this
  rank's own value, so one rank leaves the loop while its peers run the next epoch and hang in the all-gather
  (ZG204). Look-alikes: the same trainer all-reducing the loss before it keeps it, and one keeping only how many
  epochs it ran.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

TRAINER = """
import torch
import torch.distributed as dist
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024))

    def forward(self, x):
        return self.body(x)


class History:
    def __init__(self):
        self._values = {{}}

    def update_metric(self, name, value):
        self._values.setdefault(name, []).append(value)

    def latest(self, name):
        return self._values[name][-1]


class Trainer:
    def __init__(self, model: Net, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.run_history = History()
        self.metrics = {{}}
        self.last_loss = None
        self.epochs_run = 0

    def _eval_epoch(self, loader):
        total = 0.0
        with torch.no_grad():
            for x, y in loader:
                total += nn.functional.mse_loss(self.model(x), y).item()
        {reduce}
        {keep}
        self.epochs_run += 1

    def _train_epoch(self, loader):
        for x, y in loader:
            loss = nn.functional.mse_loss(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()

    def train(self, loader, eval_loader, epochs):
        best = float("inf")
        for epoch in range(epochs):
            self._train_epoch(loader)
            self._eval_epoch(eval_loader)
            current = {read}
            if current >= best:
                break
            best = current
"""

KEPT = {
    "a history object": ('self.run_history.update_metric("eval_loss", total)', 'self.run_history.latest("eval_loss")'),
    "a dict item": ('self.metrics["eval_loss"] = total', 'self.metrics["eval_loss"]'),
    "an attribute": ("self.last_loss = total", "self.last_loss"),
}


def trainer_codes(keep: str, read: str, reduce: str = "pass") -> list[str]:
    source = textwrap.dedent(TRAINER).format(keep=keep, read=read, reduce=reduce)
    return [f.code for f in check_source("trainer.py", source)]


def test_an_early_stop_on_a_loss_the_trainer_kept_from_its_model_stops_one_rank():
    for how, (keep, read) in KEPT.items():
        assert "ZG204" in trainer_codes(keep, read), how


def test_a_kept_loss_all_reduced_first_is_every_ranks():
    for how, (keep, read) in KEPT.items():
        reduced = "total = torch.tensor(total); dist.all_reduce(total); total = total.item()"
        assert trainer_codes(keep, read, reduced) == [], how


def test_a_count_of_epochs_kept_on_the_trainer_is_every_ranks():
    assert trainer_codes('self.metrics["epochs"] = self.epochs_run', "-self.epochs_run") == []


TAGGER = """
import torch
from torch import nn


class Accuracy:
    def __init__(self):
        self.correct = 0
        self.total = 0

    def update(self, pred, gold):
        self.correct += int((pred == gold).sum())
        self.total += gold.numel()

    @property
    def score(self):
        return self.correct / max(self.total, 1)


class Tagger:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer

    def fit_loader(self, loader):
        for x, y in loader:
            loss = nn.functional.cross_entropy(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()

    def record(self, out, y, metric):
        metric.update(out.argmax(-1), y)

    @torch.no_grad()
    def evaluate_loader(self, loader, metric, history):
        for x, y in loader:
            out = self.model(x)
            {fill}
        history.epochs += 1

    def train(self, trn, dev, epochs, history, patience=3):
        metric = Accuracy()
        best, best_epoch = -1.0, 0
        for epoch in range(1, epochs + 1):
            self.fit_loader(trn)
            self.evaluate_loader(dev, metric, history)
            score = {read}
            if score > best:
                best, best_epoch = score, epoch
            elif epoch - best_epoch >= patience:
                break
"""


def tagger_codes(fill: str, read: str) -> list[str]:
    source = textwrap.dedent(TAGGER).format(fill=fill, read=read)
    return [f.code for f in check_source("tagger.py", source)]


def test_an_early_stop_on_a_metric_an_evaluation_filled_from_the_model_stops_one_rank():
    assert "ZG204" in tagger_codes("metric.update(out.argmax(-1), y)", "metric.score")
    # (filled through a helper handed the output beside the metric)
    assert "ZG204" in tagger_codes("self.record(out, y, metric)", "metric.score")


def test_an_early_stop_on_what_the_evaluation_counted_without_the_model_is_every_ranks():
    assert tagger_codes("metric.update(out.argmax(-1), y)", "-history.epochs") == []
