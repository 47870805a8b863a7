"""A loss computed from a model call inside a parenthesised expression (`loss = (model(x) - y).pow(2).mean()`, `loss =
(self.model(x) - y).abs().mean()`) is what the model returned: a rank that skips its backward on its own non-finite
loss (`if torch.isnan(loss): continue`) leaves the others in the backward's gradient reduction (ZG203; the text
trigger `taint._CALLED_LOCAL`, `_OUTPUT_LOCAL`). Look-alike: a skip on a setting."""

from __future__ import annotations

import textwrap

from package_check import TINY_NET

from zgen.model import check_source

TRAIN = """
import torch
from torch import nn


""" + TINY_NET + """

def train(model, loader, opt, skip_first):
    for step, (x, y) in enumerate(loader):
        loss = (model(x) - y).pow(2).mean()
        if {test}:
            continue
        loss.backward()
        opt.step()


class Trainer:
    def __init__(self, model):
        self.model = model

    def fit(self, loader):
        for x, y in loader:
            loss = (self.model(x) - y).abs().mean()
            if {test}:
                continue
            loss.backward()
"""


def found(test: str) -> list[tuple[str, int]]:
    source = textwrap.dedent(TRAIN.format(test=test))
    return [(f.code, f.line) for f in check_source("train.py", source) if f.code.startswith("ZG2")]


def test_a_step_skipped_on_this_ranks_own_loss_skips_its_backward():
    assert found("torch.isnan(loss)") == [("ZG203", 18), ("ZG203", 31)]


def test_a_step_skipped_on_a_setting_is_alike_on_every_rank():
    assert found("skip_first and step == 0") == []
