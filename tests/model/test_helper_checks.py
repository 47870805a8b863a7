"""Checks that raise on this rank's own values from a helper that runs no module itself (issue 20, blind26/27 misses).

* A module's `validate(charge)` that raises when this rank's batch holds a value out of range
  (`(charge > self.max_charge).any()`), called by the parent's forward before the modules that follow: the rank stops
  while its peers go on into their next all-gather (ZG204). Look-alikes: the same helper raising on the input's
  number of dimensions, and on a setting of the module.
* A callback's event method (`after_batch`) that cancels the fit when this rank's loss is not finite: the training
  loop calls it in the pass (ZG204). Look-alike: the same callback checking the loss's number of dimensions.
* A trainer's `check_loss_isfinite(loss)` that counts this rank's non-finite losses and raises once the count passes a
  patience: the raise is governed by the non-finite test around it (ZG204). Look-alike: the same count kept from a
  loss all-reduced first.
* A decoding loop that stops on a method of its own (`self._check_end_condition(tokens)`) stops per rank when the
  method reads the decoded values (ZG204). Look-alike: every definition of it returns a test of extents and settings
  (`hyps.shape[1] >= self.max_len`), which hands back no value of what it is given (`taint.extent_method`).
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

EMBEDDING = """
import torch
from torch import nn


class ChargeEmbedding(nn.Module):
    def __init__(self, dim, max_charge=4):
        super().__init__()
        self.max_charge = max_charge
        self.table = nn.Embedding(2 * max_charge + 1, dim)

    def validate(self, charge):
        if {test}:
            raise ValueError("charge out of range")

    def forward(self, charge):
        return self.table(charge + self.max_charge)
"""


def embedding_codes(test: str) -> list[str]:
    return [f.code for f in check_source("conditioning.py", textwrap.dedent(EMBEDDING).format(test=test))]


def test_a_helper_raising_on_this_ranks_values_stops_one_rank():
    assert embedding_codes("(charge > self.max_charge).any() or (charge < -self.max_charge).any()") == ["ZG204"]


def test_a_helper_raising_on_the_inputs_rank_or_a_setting_stops_every_rank_alike():
    assert embedding_codes("charge.ndim != 1") == []
    assert embedding_codes("self.max_charge < 0") == []


TRAINER = """
import torch
import torch.distributed as dist
from torch import nn


class Brain:
    def __init__(self, modules, opt, patience=3):
        self.modules = nn.ModuleDict(modules)
        self.opt = opt
        self.patience = patience
        self.nonfinite_count = 0

    def check_loss_isfinite(self, loss):
        {reduce}
        if not torch.isfinite(loss):
            self.nonfinite_count += 1
            if self.nonfinite_count > self.patience:
                raise ValueError("loss is not finite and patience is exhausted")

    def fit_batch(self, x, y):
        loss = nn.functional.mse_loss(self.modules["net"](x), y)
        loss.backward()
        self.check_loss_isfinite(loss)
        self.opt.step()
"""


def trainer_codes(reduce: str = "pass") -> list[str]:
    return [f.code for f in check_source("brain.py", textwrap.dedent(TRAINER).format(reduce=reduce))]


def test_a_trainers_count_of_its_own_non_finite_losses_stops_one_rank():
    assert "ZG204" in trainer_codes()


def test_a_count_of_non_finite_losses_agreed_across_ranks_stops_every_rank():
    assert "ZG204" not in trainer_codes("dist.all_reduce(loss)")


CALLBACK = """
import torch


class CancelFit(Exception):
    pass


class TerminateOnNaN:
    def __init__(self, learner):
        self.learner = learner

    def after_batch(self):
        loss = self.learner.loss
        if {test}:
            raise CancelFit
"""


def callback_codes(test: str) -> list[str]:
    return [f.code for f in check_source("callbacks.py", textwrap.dedent(CALLBACK).format(test=test))]


def test_a_callback_that_cancels_the_fit_on_this_ranks_non_finite_loss_stops_one_rank():
    assert callback_codes("torch.isnan(loss) or torch.isinf(loss)") == ["ZG204"]


def test_a_callback_that_checks_the_losss_shape_stops_every_rank_alike():
    assert callback_codes("loss.ndim != 0") == []


SEARCHER = """
import torch
from torch import nn


class Searcher(nn.Module):
    def __init__(self, d, vocab, max_len=64, eos=2):
        super().__init__()
        self.step = nn.Linear(d, vocab)
        self.embed = nn.Embedding(vocab, d)
        self.max_len = max_len
        self.eos = eos

    def _check_end_condition(self, hyps):
        return {end}

    def forward(self, h, tokens):
        for _ in range(self.max_len):
            logits = self.step(h + self.embed(tokens[:, -1]))
            tokens = torch.cat([tokens, logits.argmax(-1, keepdim=True)], dim=1)
            if self._check_end_condition(tokens):
                break
        return tokens
"""


def searcher_codes(end: str) -> list[str]:
    return [f.code for f in check_source("searcher.py", textwrap.dedent(SEARCHER).format(end=end))]


def test_an_end_condition_on_the_tokens_a_rank_decoded_stops_one_rank():
    assert "ZG204" in searcher_codes("(hyps[:, -1] == self.eos).all()")


def test_an_end_condition_on_how_long_the_hypotheses_are_stops_every_rank_at_the_same_step():
    assert "ZG204" not in searcher_codes("hyps.shape[1] >= self.max_len")
