"""A callback that stops the training loop on this rank's own values is reported where it sets the flag
(`flags.stop_signals`, ZG204): `engine.terminate()` on a NaN output or a time limit, `state[pkg.STOP] = True` on a
metric, `engine.should_terminate = True` in the handler of a failed check. The loop that leaves on the flag lives in
another file of the package, which need not import the callback. Flags set on a counter, on a setting, on a value
all-reduced first, or that no loop leaves on, are not reported."""

from __future__ import annotations

from package_check import found_in_package

STATE = """
STOP = "stop_training"
"""

ENGINE = """
import pkg


class Engine:
    def __init__(self, process_function):
        self._process_function = process_function
        self.should_terminate = False
        self.output = None
        self.iteration = 0
        self.handlers = []

    def terminate(self):
        self.should_terminate = True

    def run(self, data, max_epochs):
        state = {pkg.STOP: False}
        for epoch in range(max_epochs):
            for batch in data:
                self.iteration += 1
                self.output = self._process_function(self, batch)
                for handler in self.handlers:
                    handler(self, state)
                if self.should_terminate or state[pkg.STOP]:
                    break
"""

HANDLERS = """
import math
import time

import torch
import torch.distributed as dist

import pkg
from .engine import Engine


class TerminateOnNan:
    def __call__(self, engine: Engine, state) -> None:
        if not math.isfinite(float(engine.output)):
            engine.terminate()


class TimeLimit:
    def __init__(self, limit):
        self.limit = limit
        self.start = time.time()

    def __call__(self, engine: Engine, state) -> None:
        elapsed = time.time() - self.start
        if elapsed > self.limit:
            state[pkg.STOP] = True


class Guard:
    def __call__(self, engine: Engine, state) -> None:
        out = engine.output
        try:
            check(out)
        except RuntimeError:
            engine.should_terminate = True


class SyncedNan:
    def __call__(self, engine: Engine, state) -> None:
        loss = engine.output.detach().clone()
        dist.all_reduce(loss)
        if not math.isfinite(loss.item()):
            engine.terminate()


class MaxIters:
    def __init__(self, limit, enabled):
        self.limit = limit
        self.enabled = enabled

    def __call__(self, engine: Engine, state) -> None:
        if engine.iteration > self.limit or self.enabled:
            engine.terminate()


class Logger:
    def __call__(self, engine: Engine, state) -> None:
        if math.isnan(float(engine.output)):
            engine.should_log = True


def check(x):
    if not bool(torch.isfinite(x).all()):
        raise RuntimeError("non-finite")
"""


def _found(tmp_path):
    files = {"state.py": STATE, "engine.py": ENGINE, "handlers.py": HANDLERS}
    return found_in_package(tmp_path, files, "handlers.py", prefix="ZG2")


def test_flags_set_on_this_ranks_output_or_clock_are_reported_at_the_setter(tmp_path):
    found = _found(tmp_path)
    assert ("ZG204", 15) in found  # engine.terminate() on a NaN output
    assert ("ZG204", 26) in found  # state[pkg.STOP] = True on this host's clock
    assert ("ZG204", 35) in found  # in the handler of a failed check of the output


def test_counter_setting_reduced_value_and_unlooped_flag_are_clean(tmp_path):
    lines = [line for _code, line in _found(tmp_path)]
    assert all(line < 38 for line in lines)


EXCEPTIONS = """
class StopTraining(Exception):
    pass


class BadConfig(Exception):
    pass
"""

TRAINER = """
from .exceptions import BadConfig, StopTraining


class Trainer:
    def __init__(self, model, callbacks):
        self.model = model
        self.callbacks = callbacks
        self.history = {}
        self.epoch = 0

    def fit(self, loader, epochs):
        try:
            for self.epoch in range(epochs):
                for x in loader:
                    loss = self.model(x).mean()
                    loss.backward()
                    self.history["loss"] = loss.item()
                for cb in self.callbacks:
                    cb.on_epoch_end(self)
        except StopTraining:
            pass
"""

CALLBACKS = """
from .exceptions import BadConfig, StopTraining
from .trainer import Trainer


class EarlyStopping:
    def __init__(self, patience):
        self.patience = patience
        self.best = float("inf")
        self.bad = 0

    def on_epoch_end(self, trainer: Trainer):
        score = trainer.history["loss"]
        if score < self.best:
            self.best = score
            self.bad = 0
        else:
            self.bad += 1
        if self.bad >= self.patience:
            raise StopTraining()


class MaxEpochs:
    def on_epoch_end(self, trainer: Trainer):
        if trainer.epoch >= 10:
            raise StopTraining()
        if not isinstance(trainer.history, dict):
            raise BadConfig("history must be a dict")
"""


def test_a_stop_exception_raised_on_this_ranks_metric_is_reported_at_the_raise(tmp_path):
    files = {"exceptions.py": EXCEPTIONS, "trainer.py": TRAINER, "callbacks.py": CALLBACKS}
    assert found_in_package(tmp_path, files, "callbacks.py", prefix="ZG2") == [("ZG204", 20)]
