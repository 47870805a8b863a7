"""A helper handed a list of networks (`set_requires_grad(nets, flag)`) walks each network's parameters: setting
`requires_grad` on them reads no value, so handing it the discriminator from a training step is no hazard. The same
walk filling every parameter (`param.data.fill_(v)`) from a re-initialiser run on the built model writes partitioned
placeholders (ZG103).
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

GAN = """
import torch
from torch import nn


def set_requires_grad(nets, requires_grad=False):
    if not isinstance(nets, list):
        nets = [nets]
    for net in nets:
        if net is not None:
            for param in net.parameters():
                param.requires_grad = requires_grad


def fill_all(nets, value=0.0):
    for net in nets:
        for param in net.parameters():
            param.data.fill_(value)


class GAN(nn.Module):
    def __init__(self):
        super().__init__()
        self.generator = nn.Linear(1024, 1024)
        self.discriminator = nn.Linear(1024, 1)

    def forward(self, x):
        return self.discriminator(self.generator(x))

    def train_step(self, x, opt):
        set_requires_grad(self.discriminator, False)
        loss = self(x).mean()
        loss.backward()
        opt.step()
        set_requires_grad(self.discriminator, True)

    def reset(self):
        fill_all([self.generator, self.discriminator])
"""


def test_flags_set_over_a_list_of_networks_read_nothing_and_a_fill_writes():
    found = sorted((f.code, f.line) for f in check_source("gan.py", textwrap.dedent(GAN)) if f.code.startswith("ZG1"))
    assert [f for f in found if f[1] in (31, 35)] == []  # the flags set in `train_step`
    assert ("ZG103", 38) in found  # the fill, run on the built model
