"""A loop over a tuple of the module's children written in place (`for coder in self.encoder, self.decoder:`) walks
each child, a module of a class zgen cannot read among them: initialising what `coder.parameters()` yields in
`init_weights`, run on the built model, writes partitioned placeholders (ZG103), and sizing them reads size 0
(ZG102). A tuple of settings (`for size in self.in_size, self.out_size:`) walks no module."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
from torch import nn
from mmcv.cnn import EncoderX


class Head(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.encoder = EncoderX(d)
        self.decoder = nn.Linear(d, d)
        self.in_size = d
        self.out_size = d

    def init_weights(self):
        for coder in self.encoder, self.decoder:
            for p in coder.parameters():
                if p.dim() > 1:
                    nn.init.xavier_uniform_(p)

    def sizes(self):
        total = 0
        for size in self.in_size, self.out_size:
            total += size.bit_length()
        return total

    def forward(self, x):
        return self.decoder(self.encoder(x))
"""


def test_a_tuple_of_children_one_of_an_unread_class_is_walked_as_modules() -> None:
    found = [(f.code, f.line) for f in check_source("model.py", textwrap.dedent(SOURCE)) if f.code.startswith("ZG1")]
    assert found == [("ZG102", 17), ("ZG103", 18)]
