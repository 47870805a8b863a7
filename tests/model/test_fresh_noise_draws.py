"""`x.new(x.size()).normal_(0, 1)`: noise drawn into a tensor a call just made is a random draw like
`torch.randn_like(x)`, so a pass that stops early on what the noise produced diverges (ZG202). A `normal_` fill of
a parameter is an initialiser, not a draw that gates anything."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(1024, 1024)
        self.fc.weight.data.normal_(0, 0.02)

    def forward(self, x):
        return self.fc(x)


class Adversary:
    def __init__(self, model: Net):
        self.model = model

    def run(self, x):
        return self.model(x)

    def attack(self, x, logits):
        noise = {noise}
        noise.requires_grad_()
        loss = ((self.run(x + noise) - logits) ** 2).sum()
        grad, = torch.autograd.grad(loss, noise)
        if {test}:
            return None
        return self.run(x + grad)
"""


def codes(noise: str, test: str) -> list[str]:
    source = textwrap.dedent(SOURCE).format(noise=noise, test=test)
    return sorted(f.code for f in check_source("m.py", source) if f.code.startswith("ZG2"))


def test_an_early_return_on_what_fresh_noise_produced():
    assert codes("x.data.new(x.size()).normal_(0, 1) * 0.1", "torch.isnan(grad.norm())") == ["ZG202"]


def test_an_early_return_on_a_setting_beside_fresh_noise():
    assert codes("x.data.new(x.size()).normal_(0, 1) * 0.1", "self.model is None") == []
