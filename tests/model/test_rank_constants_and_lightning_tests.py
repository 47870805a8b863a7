"""Rank tests spelt as a module's constant (`distributed.IS_RANK_0`), and a rank-0 evaluation reached through a
helper of the program that hands the model (or a module built around it) to a trainer's `test` (ZG201). Each with
its look-alike: the same helper called on every rank, and a constant that says nothing of the rank."""

from __future__ import annotations

import textwrap

from package_check import TINY_NET

from zgen.model import check_source

SOURCE = """
import pytorch_lightning as pl
from torch import nn
from . import distributed


""" + TINY_NET + """

class TestingTask(pl.LightningModule):
    def __init__(self, model, names):
        super().__init__()
        self.model = model
        self.names = names

    def test_step(self, batch, batch_idx):
        return self.model(batch).mean()


def test_with_lightning(trainer: pl.Trainer, model: Net, data: dict):
    task = TestingTask(model, list(data))
    trainer.test(task, list(data.values()))


def train(data):
    model = Net()
    pl.Trainer(devices=2).fit(model, data.train)
    if {gate}:
        test_with_lightning(pl.Trainer(devices=1), model, {{"valid": data.valid}})
"""


def zg201(gate: str) -> list[int]:
    found = check_source("train.py", textwrap.dedent(SOURCE.format(gate=gate)))
    return [f.line for f in found if f.code == "ZG201"]


def test_a_rank_zero_evaluation_through_a_helper_is_reported():
    assert zg201("distributed.IS_RANK_0") == [34]
    assert zg201("distributed.IS_MAIN_PROCESS") == [34]


def test_a_constant_that_is_no_rank_gates_nothing():
    assert zg201("distributed.HAS_CUDA") == []
