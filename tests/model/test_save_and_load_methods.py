"""A module's `save_*` / `load_*` methods are run on the built model like any other method a training loop calls:
normalising a child's embedding table before writing it out (`save_embedding` calling `normalize_embedding`) writes
and reads partitioned parameters (ZG101, ZG109); a `load_*` that copies a checkpoint into a child does too. A
method that only saves what a forward computed is fine."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
import torch
from torch import nn


class Mg2vec(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.n_embedding = nn.Embedding(n, d)

    def forward(self, a):
        return self.n_embedding(a)

    def normalize_embedding(self):
        norm = torch.sqrt(torch.sum(self.n_embedding.weight.data ** 2, dim=1, keepdim=True))
        self.n_embedding.weight.data = self.n_embedding.weight.data / norm

    def {name}(self, path):
{body}
"""


def codes(name: str, body: str) -> set[tuple[str, int]]:
    source = textwrap.dedent(SOURCE.format(name=name, body=textwrap.indent(textwrap.dedent(body), " " * 8)))
    return {(f.code, f.line) for f in check_source("m.py", source) if f.code.startswith("ZG1")}


def test_a_save_method_normalising_the_child_table_writes_it_partitioned():
    found = codes("save_embedding", "self.normalize_embedding()\ntorch.save(self.n_embedding.weight.cpu(), path)")
    assert ("ZG101", 16) in found and ("ZG109", 20) in found


def test_a_load_method_copying_into_the_child_writes_it_partitioned():
    assert ("ZG101", 19) in codes("load_embedding", "self.n_embedding.weight.data.copy_(torch.load(path))")


def test_a_save_method_writing_out_what_forward_computed_is_fine():
    found = codes("save_outputs", "torch.save(self(torch.arange(4)), path)")
    assert {line for _code, line in found if line >= 18} == set()  # (`normalize_embedding` itself is reported)
