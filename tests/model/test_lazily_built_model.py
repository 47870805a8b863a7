"""A plain object (a trainer) that builds its model in a setup method rather than in `__init__` holds it all the
same (`holds.held_attributes`): calling a method of it that computes with its parameters is ZG303 (h-ema,
lightweight_gan's `init_GAN`)."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found_in_package

LAZY = '''
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x):
        return self.proj(x)

    def count(self):
        self.calls += 1

    def sharpen(self):
        self.proj.weight.data.mul_(2.0)


class Blur(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("kernel", torch.ones(3))

    def forward(self, x):
        return x * self.kernel.sum()

    def widen(self):
        self.kernel = torch.ones(5)


class Trainer:
    def __init__(self, d):
        self.d = d
        self.model = None
        self.blur = None

    def setup(self):
        self.model = Net(self.d)
        self.blur = Blur()
        self.opt = torch.optim.SGD([torch.zeros(1)], lr=0.1)

    def step(self, x):
        if self.model is None:
            self.setup()
        self.model(self.blur(x)).sum().backward()
        self.opt.step()
        self.model.count()
        self.blur.widen()
        self.model.sharpen()
'''


def test_a_model_a_trainer_builds_in_a_setup_method_is_held(tmp_path: Path) -> None:
    found = found_in_package(tmp_path, {"lazy.py": LAZY}, "lazy.py", prefix="ZG3")
    assert ("ZG303", 52) in found  # `sharpen()` writes the weight of the model built in `setup`
    assert not {("ZG303", 49), ("ZG303", 50), ("ZG303", 51)} & set(found)  # an optimizer, a buffer, no parameters
