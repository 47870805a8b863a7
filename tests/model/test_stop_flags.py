"""Loops that leave on a flag another method sets on this rank's own values (`analysis/flags.py`, ZG204): early
stopping in a callback class, a checker method of the trainer, a patience counter, another file of the package;
against flags set on a counter or on a value all-reduced first."""

from __future__ import annotations

import textwrap
from pathlib import Path

from zgen.model import check_source

TRAINER = """
import torch
import torch.distributed as dist


class Trainer:
    def __init__(self, network, callbacks=()):
        self.network = network
        self.optimizer = torch.optim.Adam(self.network.parameters())
        self.callbacks = list(callbacks)
        self.stop_training = False

    def train_epoch(self, loader):
        for x, y in loader:
            loss = (self.network(x) - y).pow(2).mean()
            loss.backward()
            self.optimizer.step()
        return loss.item()

    def fit(self, loader, epochs):
        for epoch in range(epochs):
            loss = self.train_epoch(loader)
            for callback in self.callbacks:
                callback.on_epoch_end(self, epoch, loss)
            if self.stop_training:
                break
"""


def codes(extra: str, source: str = TRAINER) -> list[str]:
    text = source + textwrap.dedent(extra)
    return sorted(f.code for f in check_source("m.py", text) if f.code.startswith("ZG2"))


def test_a_callback_stops_training_on_this_ranks_loss():
    assert codes("""
        class EarlyStopping:
            def __init__(self, patience=3):
                self.best, self.wait, self.patience = float("inf"), 0, patience

            def on_epoch_end(self, trainer, epoch, loss):
                if loss < self.best:
                    self.best, self.wait = loss, 0
                else:
                    self.wait += 1
                    if self.wait > self.patience:
                        trainer.stop_training = True
    """) == ["ZG204"]


def test_a_method_of_the_trainer_sets_the_flag_it_tests_in_a_while_loop():
    source = TRAINER.replace(
        "        for epoch in range(epochs):\n            loss = self.train_epoch(loader)",
        "        while not self.stop_training:\n            loss = self.train_epoch(loader)\n            self.check(loss)",
    )
    source += textwrap.indent(textwrap.dedent("""
        def check(self, metric):
            if metric != metric or metric > 1e4:
                self.stop_training = True
    """), "    ")
    assert set(codes("", source)) == {"ZG204"}  # the `while` test and the `break` under the same flag


def test_a_setter_in_another_file_of_the_package(tmp_path: Path):
    package = tmp_path / "lib"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "callbacks.py").write_text(textwrap.dedent("""
        class NanGuard:
            def on_epoch_end(self, trainer, epoch, loss):
                if not (loss == loss):
                    trainer.stop_training = True
    """))
    text = "from lib.callbacks import NanGuard\n" + TRAINER
    path = package / "trainer.py"
    path.write_text(text)
    assert sorted(f.code for f in check_source(str(path), text) if f.code.startswith("ZG2")) == ["ZG204"]


def test_flags_set_on_a_counter_or_on_an_all_reduced_value_are_the_same_on_every_rank():
    assert codes("""
        class EpochLimit:
            def __init__(self, max_epochs):
                self.max_epochs = max_epochs

            def on_epoch_end(self, trainer, epoch, loss):
                if epoch >= self.max_epochs:
                    trainer.stop_training = True


        class ReducedStop:
            def on_epoch_end(self, trainer, epoch, loss):
                value = torch.tensor(loss)
                dist.all_reduce(value)
                if value.item() < 1e-3:
                    trainer.stop_training = True
    """) == []
