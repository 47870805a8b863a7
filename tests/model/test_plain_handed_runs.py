"""A plain class's gated call that hands a model on, or runs a model an object it holds keeps.

* `self.looper.loop(self.model.forward, x)`: a method of a plain object the trainer holds that calls the parameter
  it is handed (`def loop(self, fn, x): return fn(x)`) runs the model handed, its bound method or a lambda of one;
  also from a helper of a base trainer in another file (`self.sample(x)`);
* `self.trainer.model(x)`, `self.trainer.model.generate(x)`: a model another object of the class keeps, named as a
  module (`holds.other_objects_models`), runs there as in a helper's summary;
* `self.trainer.model.module.generate(x)`: the model a data-parallel wrapper wraps runs as the wrapper's model.

Under a rank gate or a random draw these run the model on some ranks only (ZG201, ZG202). Look-alikes: the looper
handed a function that runs no model (`self.log`) or a model's bookkeeping (`self.model.state_dict`), a loop that
does not call what it is handed, and settings read through an object (`self.cfg.model`).
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

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
            self.trainer.model(x)

    def e(self, x):
        if dist.get_rank() == 0:
            self.trainer.model.generate(x)

    def f(self, x):
        if dist.get_rank() == 0:
            return self.trainer.model.module.generate(x)
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
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "nets.py").write_text(textwrap.dedent(NETS))
    (pkg / "looper.py").write_text(textwrap.dedent(LOOPER))
    (pkg / "base.py").write_text(textwrap.dedent(BASE))
    module = pkg / "train.py"
    module.write_text("from .nets import Net\n" + textwrap.dedent(trainer))
    return [(f.code, f.line) for f in check_source(str(module), module.read_text()) if f.code.startswith("ZG2")]


def test_handed_models_kept_models_and_wrapped_models_run(tmp_path):
    assert _found(tmp_path, TRAINER) == [
        ("ZG201", 10), ("ZG202", 14), ("ZG201", 18), ("ZG201", 22), ("ZG201", 26), ("ZG201", 30)]


def test_handed_functions_without_models_bookkeeping_kept_callables_and_settings_safe(tmp_path):
    assert _found(tmp_path, SAFE_TRAINER) == []
