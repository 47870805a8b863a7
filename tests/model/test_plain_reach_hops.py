"""Reach from a gate in a plain class (a trainer, an evaluator, an agent) to a model, through the values it holds.

Three facts of how such code holds what runs a model:

* an argument handed in with no annotation (`def evaluate(self, ev, x)`, `def run_eval(ev, rank, x)`) is an
  instance of the one plain class of the package answering every method called on it (as an untyped `self.q` is,
  `reach._duck_typed`): `ev.score(x)` runs what that class's `score` runs;
* a model kept by such an object and called through it (`self.q.model(x)`) runs that model;
* the model a wrapper the class holds wraps (`self.model.module.predict(x)`) runs as the held model does.

A rank gate or a random draw around any of these runs the model on some ranks only (ZG201, ZG202). Look-alikes:
an argument bound again in the function, one on which only methods every object has are called (`env.step`), two
classes answering, a local bound again, and bookkeeping on a local (`model.state_dict()` on rank 0).
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

EVAL = """
class Evaluator:
    def __init__(self, model):
        self.model = model

    def score(self, x):
        return self.run(x)

    def run(self, x):
        return self.model(x)
"""

# A second class answering `score`: which one an argument is, is not told.
EVAL_TWICE = EVAL + """

class Printer:
    def score(self, x):
        print(x)
"""

TRAINER = """
import random
import torch.distributed as dist


class Trainer:
    def __init__(self, model, rank, q):
        self.model = model
        self.rank = rank
        self.q = q

    def evaluate(self, ev, x):
        if self.rank == 0:
            ev.score(x)

    def explore(self, x):
        if random.random() < 0.1:
            self.q.model(x)
        return self.q.score(x)

    def predict(self, x):
        if dist.get_rank() == 0:
            return self.model.module.predict(x)


def run_eval(ev, rank, x):
    if rank == 0:
        ev.score(x)
"""

NET = """
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

SAFE_TRAINER = """
import random
import torch
import torch.distributed as dist


class Trainer:
    def __init__(self, model, rank):
        self.model = model
        self.rank = rank

    def evaluate(self, ev, x):
        ev = ev or None
        if self.rank == 0:
            ev.score(x)

    def explore(self, env, x):
        if random.random() < 0.1:
            env.step(x)

    def save(self, path):
        model = self.model
        if dist.get_rank() == 0:
            torch.save(model.state_dict(), path)

    def predict(self, x, other):
        model = self.model
        model = other
        if dist.get_rank() == 0:
            return model.predict(x)
"""


def _found(tmp_path, evals: str, trainer: str) -> list[tuple[str, int]]:
    """The ZG2 findings of `pkg/train.py` beside `pkg/evals.py` and `pkg/nets.py`, neither imported."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "evals.py").write_text(textwrap.dedent(evals))
    (pkg / "nets.py").write_text(textwrap.dedent(NET))
    module = pkg / "train.py"
    module.write_text(textwrap.dedent(trainer))
    return [(f.code, f.line) for f in check_source(str(module), module.read_text()) if f.code.startswith("ZG2")]


def test_untyped_argument_kept_model_and_wrapped_model_reach(tmp_path):
    assert _found(tmp_path, EVAL, TRAINER) == [("ZG201", 13), ("ZG202", 17), ("ZG201", 22), ("ZG201", 27)]


def test_two_classes_answering_an_argument_tell_nothing(tmp_path):
    # (`self.q` is told by `score` and the `model` it keeps, which `Printer` lacks; the argument `ev` only by `score`)
    assert _found(tmp_path, EVAL_TWICE, TRAINER) == [("ZG202", 17), ("ZG201", 22)]


def test_rebound_argument_common_verbs_bookkeeping_and_rebound_alias_safe(tmp_path):
    assert _found(tmp_path, EVAL, SAFE_TRAINER) == []
