"""What a loop variable walks: one reading of `for` targets (`flow.loop_items`: `list`/`sorted`/`filter`/...,
`enumerate`, `zip`, pairs), shared by the submodule calls, the parameter accesses, a function's effects on its
module arguments and the helpers handed a model. Each case was missed by one of the six readings it replaces."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

HEAD = """
from typing import Iterable

import torch
from torch import nn
"""


def codes(source: str) -> list[str]:
    return [f.code for f in check_source("m.py", HEAD + textwrap.dedent(source))]


# LayerDrop over two lists walked together, numbered (transformers' Informer encoder).
ENUMERATED_ZIP = """
class Encoder(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(512, 512) for _ in range(n)])
        self.convs = nn.ModuleList([nn.Linear(512, 512) for _ in range(n)])
        self.layerdrop = 0.1

    def forward(self, x):
        for i, (layer, conv) in enumerate(zip(self.layers, self.convs)):
            if torch.rand([]) < self.layerdrop:
                continue
            x = conv(layer(x))
        return x
"""


def test_layers_taken_through_enumerate_of_zip_are_submodule_calls():
    assert codes(ENUMERATED_ZIP) == ["ZG202"]


def test_parameters_listed_then_enumerated_in_init_are_partitioned_submodule_parameters():
    source = """
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(512, 512)
            params = list(self.parameters())
            for i, p in enumerate(params):
                nn.init.normal_(p, std=0.02 / (i + 1))
    """
    assert codes(source) == ["ZG103"]


def test_parameters_picked_by_filter_in_a_helper_handed_them_are_partitioned():
    source = """
    class Ema:
        def __init__(self):
            self.shadow = []

        def copy_to(self, parameters: Iterable[torch.nn.Parameter]) -> None:
            for s, p in zip(self.shadow, filter(lambda p: p.requires_grad, parameters)):
                p.data.copy_(s)
    """
    assert codes(source) == ["ZG101"]
