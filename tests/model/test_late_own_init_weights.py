"""A module's own parameters written by an initialiser no constructor runs (`init_weights`, which OpenMMLab's runner
calls on the built model) are partitioned placeholders by then (ZG103), like its children's.

Look-alikes: the same method run by a subclass's `__init__` on the object it is still building (partitioned only
when the outermost constructor returns), and torch's own re-initialiser `reset_parameters`, which a runtime building
on `meta` calls on the materialised module (`test_late_own_initialisers.py`).
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

BACKBONE = """
import torch
from torch import nn
from mmengine.model import BaseModule
from mmengine.model.weight_init import trunc_normal_


class TimeSformer(BaseModule):
    def __init__(self, n, d):
        super().__init__()
        self.pos_embed = nn.Parameter(torch.zeros(1, n, d))
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d))
        self.blocks = nn.Linear(d, d)

    def init_weights(self):
        trunc_normal_(self.pos_embed, std=0.02)
        trunc_normal_(self.cls_token, std=0.02)

    def forward(self, x):
        return self.blocks(x + self.pos_embed)
"""

LOOK_ALIKES = """
import torch
from torch import nn


class Base(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.pos_embed = nn.Parameter(torch.zeros(1, n, d))

    def init_weights(self):
        nn.init.trunc_normal_(self.pos_embed, std=0.02)

    def reset_parameters(self):
        nn.init.zeros_(self.pos_embed)

    def forward(self, x):
        return x + self.pos_embed


class Built(Base):
    def __init__(self, n, d):
        super().__init__(n, d)
        self.init_weights()
"""


def _found(source: str) -> list[tuple[str, int]]:
    found = check_source("model.py", textwrap.dedent(source))
    return sorted((f.code, f.line) for f in found if f.code.startswith("ZG1"))


def test_an_initialiser_the_runner_calls_writes_the_modules_own_placeholders():
    assert _found(BACKBONE) == [("ZG103", 16), ("ZG103", 17)]


def test_a_subclass_constructor_and_torchs_re_initialiser_are_no_such_writes():
    assert _found(LOOK_ALIKES) == []
