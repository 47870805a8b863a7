"""A child reached through a property of another child's class (`self.vq.embedding.weight`, with `@property def
embedding(self): return self._embedding`) is that child: reading its table in the parent's forward reads a
parameter no hook gathered (ZG301). A norm handed back the same way keeps its vectors gathered."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
import torch
from torch import nn


class VectorQuantizer(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self._embedding = nn.Embedding(n, d)
        self._norm = nn.LayerNorm(d)

    @property
    def embedding(self):
        return self._embedding

    @property
    def norm(self):
        return self._norm

    def forward(self, z):
        return self._norm(self._embedding(z))


class Model(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.vq = VectorQuantizer(n, d)

    def forward(self, z):
        codes = self.vq(z)
        fake = torch.cdist(z, self.vq.embedding.weight)
        scaled = z * self.vq.norm.weight
        return codes, fake, scaled
"""


def test_a_childs_table_through_a_property_is_read_unhooked_and_its_norm_is_not():
    found = [(f.code, f.line) for f in check_source("dsr.py", textwrap.dedent(SOURCE)) if f.code.startswith("ZG3")]
    assert found == [("ZG301", 31)]
