"""A loop over a generator of the file that yields once per shard of its argument (`while start < x.shape[-2]`,
`for s in range(0, x.shape[0], n)`) runs as often as this rank's input is long: a submodule called in it is called a
different number of times on each rank (ZG204). A generator yielding a count of settings is the same everywhere."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found

SHARDS = '''
import torch
from torch import nn


def sharded(edge, size):
    start, end = 0, size
    while start < edge.shape[-2]:
        yield start, end, edge[start:end]
        start, end = end, end + size


def fixed(edge, n):
    for i in range(n):
        yield i, edge


class Attention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.attention = nn.Linear(d, d)

    def forward(self, edge, size):
        out = torch.empty_like(edge)
        for {target} in {call}:
            out[s:e] = self.attention(part)
        return out
'''


def test_a_submodule_called_once_per_shard_a_generator_of_the_input_yields(tmp_path: Path) -> None:
    path = tmp_path / "attention.py"
    path.write_text(SHARDS.format(target="s, e, part", call="sharded(edge, size)"))
    assert found(path, "ZG2") == [("ZG204", 25)]
    path.write_text(SHARDS.format(target="s, part", call="fixed(edge, 4)").replace("out[s:e]", "out[s]"))
    assert found(path, "ZG2") == []
