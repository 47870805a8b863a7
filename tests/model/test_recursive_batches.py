"""A `forward` that, given an optional batch or chunk size, returns after running itself again on pieces of its
input (`if batch_size is not None: ... self(data, n) ... return torch.cat(batches)`) runs, in that branch, every
tower it runs after the test: skipping to the end of the method skips none of them (ZG205). Only the branch's own
calls can differ (`return self.forward(x) + self.ctx_tower(context)` still runs a tower only with the input)."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

HEAD = """
import torch
from torch import nn


def tower():
    return nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = tower()
        self.dec = tower()
        self.ctx_tower = tower()
"""


def _zg205(body: str) -> list[int]:
    start = len(textwrap.dedent(HEAD).splitlines())
    src = textwrap.dedent(HEAD) + textwrap.indent(textwrap.dedent(body), "    ")
    return [f.line - start for f in check_source("m.py", src, None) if f.code == "ZG205"]


def test_batches_of_itself_are_clean():
    assert _zg205("""
        def forward(self, data, num_samples, batch_size=None):
            if batch_size is not None:
                batches = []
                while num_samples > 0:
                    batches.append(self(data, min(num_samples, batch_size)))
                    num_samples -= batch_size
                return torch.cat(batches)
            z = self.enc(data)
            return self.dec(z)
    """) == []


def test_chunks_through_forward_are_clean():
    assert _zg205("""
        def forward(self, x, chunk_size=None):
            if chunk_size is not None:
                return torch.cat([self.forward(c) for c in x.split(chunk_size)])
            h = self.enc(x)
            return self.dec(h)
    """) == []


def test_recursion_beside_a_tower_of_the_input_is_found():
    assert _zg205("""
        def forward(self, x, context=None):
            if context is not None:
                return self.forward(x) + self.ctx_tower(context)
            h = self.enc(x)
            return self.dec(h)
    """) == [3]


def test_early_return_without_recursion_is_found():
    assert _zg205("""
        def forward(self, x, cached=None):
            if cached is not None:
                return cached * 2
            h = self.enc(x)
            return self.dec(h)
    """) == [3]
