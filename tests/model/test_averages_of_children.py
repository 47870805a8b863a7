"""A module's training step handing a child to a weight average (`self.generator_ema.update_parameters(
self.generator)`, the average built by a registry from a config) blends in every parameter of the child outside any
forward: partitioned placeholders (ZG109). An average of a scalar (`self.loss_ema.update(loss.item())`) reads none.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

GAN = """
import torch
from torch import nn
from mmengine.registry import MODELS


class GAN(nn.Module):
    def __init__(self, ema_config):
        super().__init__()
        self.generator = nn.Linear(1024, 1024)
        self.generator_ema = MODELS.build(ema_config)
        self.loss_ema = MODELS.build(dict(type="Meter"))

    def forward(self, x):
        return self.generator(x)

    def train_step(self, x, opt):
        loss = self(x).mean()
        loss.backward()
        opt.step()
        self.loss_ema.update(loss.item())
        self.generator_ema.update_parameters(
            self.generator.module if hasattr(self.generator, "module") else self.generator)
"""


def test_a_child_handed_to_a_weight_average_is_read_and_a_scalar_is_not():
    found = sorted((f.code, f.line) for f in check_source("gan.py", textwrap.dedent(GAN)) if f.code.startswith("ZG1"))
    assert found == [("ZG109", 22)]
