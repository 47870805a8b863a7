"""What a random draw is: one description (`known.RANDOM_TORCH`, `RANDOM_TORCH_METHODS`, `RANDOM_HOST_PREFIXES`,
read by `taint.draw_kind`) for the taint, for helpers that return a draw and for a LayerDrop list's `__iter__`.
Each case below was judged differently by one of the text patterns the three used to have."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

HEAD = """
import random
import torch
from torch import nn
"""


def codes(source: str) -> list[str]:
    return [f.code for f in check_source("m.py", HEAD + textwrap.dedent(source))]


# A layer list that drops layers in `__iter__` with `torch.randint`/`torch.randperm`.
DROPPING_LIST = """
class LayerDropList(nn.ModuleList):
    def __iter__(self):
        keep = {draw}
        for i, layer in enumerate(super().__iter__()):
            if i in keep:
                yield layer


class Net(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.layers = LayerDropList([nn.Linear(512, 512) for _ in range(n)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
"""


def test_a_layer_list_drawing_with_randint_or_randperm_skips_at_random():
    # reported where the list decides which layers it hands out, and at the loop over it
    assert codes(DROPPING_LIST.format(draw="set(torch.randperm(len(self))[:2].tolist())")) == ["ZG202", "ZG202"]
    assert codes(DROPPING_LIST.format(draw="{int(torch.randint(0, len(self), ()))}")) == ["ZG202", "ZG202"]


def test_a_layer_list_without_a_draw_does_not():
    assert codes(DROPPING_LIST.format(draw="set(range(len(self)))")) == []


# A helper that returns some of the layers: random when it draws, not when it only initialises them.
HELPER = """
{imports}

def some(layers, p):
    {body}
    return [layer for layer in layers if p > 0]


class Net(nn.Module):
    def __init__(self, n, p):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(512, 512) for _ in range(n)])
        self.p = p

    def forward(self, x):
        layers = some(self.layers, self.p)
        for layer in layers:
            x = layer(x)
        return x
"""


def test_a_helper_drawing_through_an_imported_name_returns_a_random_selection():
    source = HELPER.format(imports="from numpy.random import rand as coin", body="p = p * coin()")
    assert codes(source) == ["ZG202"]


def test_a_helper_that_initialises_with_nn_init_uniform_is_not_random():
    source = HELPER.format(imports="", body="for layer in layers: nn.init.uniform_(layer.weight)")
    assert "ZG202" not in codes(source)
