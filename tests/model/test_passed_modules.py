"""What a wrapper's constructor parameter holds, read from the file's own constructions of the wrapper
(`program/given.py`): a random gate over a callable skips a gathered module only when it can be one."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

WRAPPER = """
import random
from torch import nn
from torchvision import transforms as T


class RandomApply(nn.Module):
    def __init__(self, fn, p):
        super().__init__()
        self.fn = fn
        self.p = p

    def forward(self, x):
        if random.random() > self.p:
            return x
        return self.fn(x)


class Augment(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.augment = nn.Sequential(
            RandomApply({first}, p=0.3),
            RandomApply({second}, 0.2),
        )

    def forward(self, x):
        return self.augment(x)
"""


def codes(first: str, second: str) -> list[str]:
    return [f.code for f in check_source("m.py", textwrap.dedent(WRAPPER.format(first=first, second=second)))]


def test_a_random_gate_over_transforms_the_file_hands_in_skips_no_gathered_module():
    assert codes("T.ColorJitter(0.8, 0.8, 0.8, 0.2)", "T.GaussianBlur((3, 3), (1.0, 2.0))") == []


def test_a_random_gate_over_a_layer_the_file_hands_in_is_flagged():
    assert codes("T.ColorJitter(0.8, 0.8, 0.8, 0.2)", "nn.Linear(size, size)") == ["ZG202"]


def test_a_random_gate_over_a_callable_whose_construction_is_not_read_is_flagged():
    assert codes("T.ColorJitter(0.8, 0.8, 0.8, 0.2)", "size.block") == ["ZG202"]
