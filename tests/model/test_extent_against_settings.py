"""An early return on an extent of the input compared with a setting of the module (`analysis/taint.py`,
`_extent_test`, `_extent_names`; ZG204): `n < self.chunk_size` for `n` read from `x.shape[-2]`, also in a tuple
assignment of several reads (`b, n, c = x.shape[0], x.shape[-2], *ctx.shape[-2:]`); against the same test padding
the input or raising, which skip nothing."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
import torch
import torch.nn.functional as F
from torch import nn


class ChunkedAttention(nn.Module):
    def __init__(self, chunk):
        super().__init__()
        self.chunk_size = chunk
        self.attn = nn.Linear(512, 512)

    def forward(self, x, *, context):
        {read}
        if n < self.chunk_size:
            {then}
        return self.attn(x)
"""


def _found(read: str, then: str) -> list[tuple[str, int]]:
    source = textwrap.dedent(SOURCE).replace("{read}", read).replace("{then}", then)
    return [(f.code, f.line) for f in check_source("model.py", source) if f.code.startswith("ZG2")]


def test_return_on_an_extent_below_a_setting_skips_the_attention():
    assert _found("n = x.shape[-2]", "return torch.zeros_like(x)") == [("ZG204", 15)]


def test_extent_read_in_a_tuple_of_reads_with_a_starred_shape():
    read = "b, n, num_chunks, k = x.shape[0], x.shape[-2], *context.shape[-4:-2]"
    assert _found(read, "return torch.zeros_like(x)") == [("ZG204", 15)]


def test_padding_or_raising_on_the_same_test_is_clean():
    read = "b, n, num_chunks, k = x.shape[0], x.shape[-2], *context.shape[-4:-2]"
    assert _found(read, "x = F.pad(x, (0, 0, 0, self.chunk_size - n))") == []
    assert _found(read, "raise ValueError(n)") == []
