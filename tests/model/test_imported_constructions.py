"""A value is a module when it is built from a module class of another file of the package (`self.model =
Policy(d)`, `model = build_policy(d)` with `Policy` and `build_policy` imported), wherever the construction
sits: a plain trainer's `__init__`, a function, a method. Classes of other files are read, never imported
(issue 20: held-out trainers build their models from the package's model files)."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

NETS = """
import torch
from torch import nn


class Policy(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.body = nn.Linear(d, d)
        self.head = nn.Linear(d, 2)

    def forward(self, x):
        return self.head(torch.relu(self.body(x)))


class Tokenizer:
    def __init__(self, vocab):
        self.vocab = vocab

    def __call__(self, text):
        return [self.vocab[t] for t in text]


def build_policy(d):
    net = Policy(d)
    return net
"""

TRAINER = """
import torch
import torch.distributed as dist
from .nets import Policy, Tokenizer, build_policy


class Trainer:
    def __init__(self, d, vocab):
        self.model = {model}
        self.tokenizer = Tokenizer(vocab)

    def fit(self, loader):
        for x, text in loader:
            loss = self.model(x).sum()
            loss.backward()
            if dist.get_rank() == 0:
                self.model(x)
            if dist.get_rank() == 0:
                self.tokenizer(text)

    def save(self, path):
        torch.save(self.model.state_dict(), path)
"""


def _check(tmp_path, model: str):
    pkg = tmp_path / "rl"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "nets.py").write_text(textwrap.dedent(NETS))
    trainer = pkg / "trainer.py"
    trainer.write_text(textwrap.dedent(TRAINER).replace("{model}", model))
    return [(f.code, f.line) for f in check_source(str(trainer), trainer.read_text())]


def test_a_plain_trainer_holding_an_imported_module_class_gets_its_rank_gate_and_state_dict(tmp_path):
    # `self.model` is only ever called, so nothing but the class of another file says it is a module
    assert _check(tmp_path, "Policy(d)") == [("ZG201", 16), ("ZG108", 22)]


def test_a_factory_function_of_another_file_builds_the_module(tmp_path):
    assert _check(tmp_path, "build_policy(d)") == [("ZG201", 16), ("ZG108", 22)]


def test_an_imported_class_that_is_no_module_holds_nothing(tmp_path):
    # the tokenizer's rank-gated call gathers nothing; a model built from a plain class is no model
    assert _check(tmp_path, "Tokenizer(d)") == []
