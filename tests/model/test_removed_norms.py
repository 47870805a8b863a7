"""Weight norm removed from a built model outside its construction.

`remove_weight_norm(m)` recomputes `m.weight` from `weight_g` and `weight_v` and registers it again: on the modules
of a model a function is handed or a plain class holds (`for m in self.net_g.modules():`), directly or through a
helper of the program that does it, it computes with partitioned placeholders (ZG101). Walking the same modules
only to count or switch them computes with nothing.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
from torch import nn
from torch.nn.utils import remove_weight_norm


def strip_norm(module):
    try:
        remove_weight_norm(module)
    except ValueError:
        pass


def prepare(generator):
    for m in generator.modules():
        remove_weight_norm(m)
    return generator


def count_convs(generator):
    return sum(1 for m in generator.modules() if isinstance(m, nn.Conv1d))


class Synthesizer:
    def __init__(self, net_g):
        self.net_g = net_g

    def load(self):
        self.net_g.eval()
        for m in self.net_g.modules():
            strip_norm(m)

    def switch(self):
        for m in self.net_g.modules():
            m.train(False)
"""


def test_removing_weight_norm_from_a_built_models_modules_is_found() -> None:
    found = [(f.code, f.line) for f in check_source("model.py", textwrap.dedent(SOURCE)) if f.code.startswith("ZG1")]
    assert found == [("ZG101", 8), ("ZG101", 15), ("ZG101", 30)]
