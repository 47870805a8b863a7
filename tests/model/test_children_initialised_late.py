"""Children initialised after they were built, in two more shapes.

* Layers built as locals in `__init__` and initialised through a loop over a list of them (`for conv in [conv_a,
  conv_b]: init.normal_(conv.weight)`): each was partitioned when its constructor returned (ZG103).
* `reset_parameters()` of a child called in the parent's forward, or of each module a walk of a child yields
  (`for layer in self.generator.children(): layer.reset_parameters()`): the child's hooks have not gathered its
  parameters there (ZG101).
Look-alikes: the loop inside `GatheredParameters`, a loop over numbers, and the module's own `reset_parameters()`
in its forward, where its own parameters are gathered.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

LISTA = """
import deepspeed
import torch
from torch import nn
from torch.nn import init


class Lista(nn.Module):
    def __init__(self, c, n):
        super().__init__()
        conv_a = nn.Conv2d(c, n, 3)
        conv_b = nn.ConvTranspose2d(n, c, 3)
{init}
        self.conv_a = conv_a
        self.conv_b = conv_b

    def forward(self, x):
        return self.conv_b(self.conv_a(x))
"""

RESET = """
import torch
from torch import nn


class Gen(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(512, 512)
        self.b = nn.Linear(512, 512)

    def forward(self, x):
        return self.b(self.a(x))


class Prior(nn.Module):
    def __init__(self, re_init=True):
        super().__init__()
        self.generator = Gen()
        self.head = nn.Linear(512, 512)
        self.bias = nn.Parameter(torch.zeros(512))
        self.re_init = re_init

    def reset_parameters(self):
        nn.init.zeros_(self.bias)

    def forward(self, y):
{body}
        return self.head(self.generator(y)) + self.bias
"""


def _zg1(source: str) -> list[tuple[str, int]]:
    found = check_source("model.py", textwrap.dedent(source))
    return sorted((f.code, f.line) for f in found if f.code.startswith("ZG1"))


def test_local_layers_initialised_through_a_list_of_them():
    init = "        for conv in [conv_a, conv_b]:\n            init.normal_(conv.weight)"
    assert _zg1(LISTA.format(init=init)) == [("ZG103", 14)]


def test_the_same_loop_gathered_or_over_numbers_is_clean():
    gathered = (
        "        with deepspeed.zero.GatheredParameters([conv_a.weight, conv_b.weight], modifier_rank=0):\n"
        "            for conv in [conv_a, conv_b]:\n                init.normal_(conv.weight)"
    )
    assert _zg1(LISTA.format(init=gathered)) == []
    assert _zg1(LISTA.format(init="        for k in [1, 2]:\n            print(k)")) == []


def test_children_reset_in_the_parents_forward():
    body = (
        "        if self.re_init:\n"
        "            for layer in self.generator.children():\n"
        "                if hasattr(layer, 'reset_parameters'):\n"
        "                    layer.reset_parameters()\n"
        "        self.head.reset_parameters()"
    )
    assert _zg1(RESET.format(body=body)) == [("ZG101", 31), ("ZG101", 32)]


def test_the_modules_own_reset_in_its_forward_is_clean():
    assert _zg1(RESET.format(body="        self.reset_parameters()")) == []
