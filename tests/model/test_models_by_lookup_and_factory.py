"""Models a script gets without constructing them where zgen sees it: a factory that hands back the model it was
given or builds one (`return model` if built already, else `return Sum(**model)`), and a registry's entry used as
a module (`model = models["text"]["model"]` ... `next(model.parameters())`). A generation loop that stops on the
token this rank sampled then runs the model a different number of times per rank (ZG204); the same loop with a
fixed count does not."""

from __future__ import annotations

import textwrap

from package_check import TINY_NET

from zgen.model import check_source

LOOKUP = """
import torch

models = {{}}


def generate(text_ids, steps=256):
    model = models["text"]["model"]
    device = next(model.parameters()).device
    x = torch.tensor(text_ids, device=device)[None]
    for _ in range(steps):
        logits = model(x)[:, -1]
        item = torch.multinomial(logits.softmax(-1), num_samples=1)
        {stop}
        x = torch.cat([x, item], dim=1)
    return x
"""


def zg2(source: str, **parts: str) -> list[str]:
    found = check_source("gen.py", textwrap.dedent(source.format(**parts)))
    return sorted({f.code for f in found if f.code.startswith("ZG2")})


def test_a_looked_up_model_stopped_by_its_own_sample_is_reported():
    assert "ZG204" in zg2(LOOKUP, stop="if item.item() == 0:\n            break")


def test_a_looked_up_model_run_a_fixed_number_of_steps_is_not():
    assert zg2(LOOKUP, stop="pass") == []


FACTORY = """
import torch
from torch import nn


""" + TINY_NET + """

class Sum(nn.Module):
    def __init__(self, **parts):
        super().__init__()
        self.parts = nn.ModuleDict(parts)

    def forward(self, x):
        return sum(p(x) for p in self.parts.values())


def parse_model(model):
    if isinstance(model, nn.Module):
        return model
    return Sum(**model)


def train(config, loader):
    model = parse_model(config.model)
    for x in loader:
        {step}
"""


def test_a_factorys_model_run_until_its_loss_is_small_enough_is_reported():
    assert "ZG204" in zg2(FACTORY, step="if model(x).mean().item() < 0.1:\n            break")


def test_a_factorys_model_run_on_every_batch_is_not():
    assert zg2(FACTORY, step="model(x).mean().backward()") == []
