"""An optional input a parent of the file fixes by the model's structure (`analysis/callers.py`): a decoder block
whose skip the parent passes by stage, absent only for the last one, skips no tower per rank (ZG205)."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

BLOCKS = """
from torch import nn


def exists(v):
    return v is not None


class Tower(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.proj = nn.Linear(c, c)
        self.out = nn.Linear(c, c)


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = Tower(c)
        self.conv = nn.Linear(c, c)

    def forward(self, x, skip=None):
        if skip is not None:
            x = self.attention(x + skip)
        return self.conv(x)


class Decoder(nn.Module):
    def __init__(self, c, n):
        super().__init__()
        self.blocks = nn.ModuleList([Block(c) for _ in range(n)])

    def forward(self, features, extra=None):
        skips = features[1:]
        x = features[0]
        for i, block in enumerate(self.blocks):
            {body}
        return x
"""


def codes(body: str) -> list[str]:
    return [f.code for f in check_source("m.py", textwrap.dedent(BLOCKS.format(body=body)))]


def test_a_skip_the_parent_passes_by_stage_is_the_architectures_decision():
    assert codes("skip = skips[i] if i < len(skips) else None\n            x = block(x, skip=skip)") == []
    assert codes("x = block(x, skips[i])") == []


def test_a_skip_the_parent_hands_on_from_its_own_optional_input_is_flagged():
    assert codes("x = block(x, extra)") == ["ZG205"]
    assert codes("x = block(x, skip=extra if exists(extra) else None)") == ["ZG205"]


def test_a_skip_chosen_by_a_presence_test_in_the_parent_is_flagged():
    assert codes("skip = skips[i] if skips is not None else None\n            x = block(x, skip)") == ["ZG205"]
