"""LayerDrop written through a method of the class that returns a draw (`if self._drop(): continue` with `return
random.random() < self.p`, `taint.random_method`): the method's call is a literal of the draw trigger, so a forward
whose own text names no draw is read (ZG202). A helper returning a setting alone stays clean."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

ENC = """
import random
import torch.nn as nn

class Enc(nn.Module):
    def __init__(self, p=0.1):
        super().__init__()
        self.p = p
        self.blocks = nn.ModuleList([nn.Linear(1024, 1024) for _ in range(6)])

    def _drop(self):
        return {test}

    def forward(self, x):
        for blk in self.blocks:
            if self._drop():
                continue
            x = blk(x)
        return x
"""


def codes(source: str) -> list[str]:
    return [f.code for f in check_source("m.py", textwrap.dedent(source))]


def test_a_helper_method_drawing_the_drop_decision_skips_blocks_at_random():
    assert codes(ENC.replace("{test}", "self.training and random.random() < self.p")) == ["ZG202"]
    assert codes(ENC.replace("{test}", "random.random() < self.p")) == ["ZG202"]


def test_a_helper_method_returning_a_setting_decides_nothing_per_rank():
    assert codes(ENC.replace("{test}", "self.p >= 1.0 and self.training")) == []
