"""A module whose mixin base is a plain class calls that base's constructor by its class with a child it built
(`ErmPlusPlusMovingAvg.__init__(self, self.network)`), and the base keeps a deep copy of what it is handed
(`self.network_sma = copy.deepcopy(network)`): the copy is taken of a child `zero.Init` partitioned when it was built
(ZG105 at the call; `built._handed_built` maps the arguments past `self`). Look-alike: a base constructor handed a
setting."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

ALGO = """
import copy
from torch import nn


class MovingAvg:
    def __init__(self, network, start=600):
        self.network_sma = copy.deepcopy(network)
        self.start = start


class Algo(nn.Module, MovingAvg):
    def __init__(self):
        nn.Module.__init__(self)
        self.network = nn.Sequential(nn.Linear(4, 512), nn.Linear(512, 4))
        MovingAvg.__init__(self, {handed})

    def forward(self, x):
        return self.network(x)
"""


def found(handed: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("algo.py", textwrap.dedent(ALGO.format(handed=handed)))
            if f.code == "ZG105" and f.line > 12]


def test_a_base_constructor_called_by_class_deep_copies_the_built_child():
    assert found("self.network") == [("ZG105", 16)]


def test_a_base_constructor_handed_a_setting_copies_no_module():
    assert found("None, start=10") == []
