"""A parameter the class itself puts into a child it cannot read (`self.encoder.pos_embed = nn.Parameter(...)`).

The name is one the file registers as a parameter, so the parent's forward adding `self.encoder.pos_embed` reads a
parameter of the child outside the child's forward (ZG301). A one-element parameter put there the same way stays
gathered once fetched, and reading it is clean.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SEG = """
import torch
from torch import nn
from segment_anything import sam_model_registry


class Seg(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = sam_model_registry["vit_l"](None).image_encoder.to(torch.float32)
        self.encoder.{name} = nn.Parameter({init})
        self.encoder.patch_embed.proj = nn.Conv2d(3, 1024, stride=8, kernel_size=8)
        self.out = nn.Conv2d(1024, 3, kernel_size=1)

    def forward(self, x):
        x = x.permute(0, 2, 3, 1) * self.encoder.{name}
        return self.out(x.permute(0, 3, 1, 2))
"""


def _zg3(name: str, init: str) -> list[tuple[str, int]]:
    source = textwrap.dedent(SEG.format(name=name, init=init))
    return [(f.code, f.line) for f in check_source("seg.py", source) if f.code.startswith("ZG3")]


def test_a_table_put_into_a_child_read_in_the_parents_forward():
    assert _zg3("pos_embed", "torch.zeros(1, 32, 32, 1024)") == [("ZG301", 16)]


def test_a_scalar_put_there_stays_gathered():
    assert _zg3("gain", "torch.ones(1)") == []
