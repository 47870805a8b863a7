"""A module that overrides `__call__` and defines no `forward` (lingua's `TiedLinear`: `return F.linear(x,
self.tied_module.weight)`) runs that method when called, with no hook at all: a large weight of another module it
reads there is read outside that module's forward (ZG301; `ClassInfo.forward_methods`). Look-alike: the same head
calling the embedding module itself."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

LM = """
import torch.nn.functional as F
from torch import nn


class TiedLinear(nn.Module):
    def __init__(self, tied_module):
        super().__init__()
        self.tied_module = tied_module

    def __call__(self, x):
        return {read}


class LM(nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab, dim)
        self.output = TiedLinear(self.tok_embeddings)

    def forward(self, ids):
        return self.output(self.tok_embeddings(ids))
"""


def found(read: str) -> list[tuple[str, int]]:
    source = textwrap.dedent(LM.format(read=read))
    return [(f.code, f.line) for f in check_source("lm.py", source) if f.code.startswith("ZG3")]


def test_a_call_override_reading_another_modules_weight():
    assert found("F.linear(x, self.tied_module.weight)") == [("ZG301", 12)]


def test_a_call_override_calling_the_module_itself():
    assert found("self.tied_module(x)") == []
