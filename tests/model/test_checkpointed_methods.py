"""A helper handing a child's method to activation checkpointing (`checkpoint(layer.step, t, h)`) runs that method,
and with it the child's layers (chroma's sequential graph decoder steps each layer once per residue)."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

GRAPH = """
from torch import nn
from torch.utils.checkpoint import checkpoint


class GraphLayer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.node = nn.Linear(dim, dim)

    def step(self, t, node_h):
        return self.node(node_h[:, t])

    def forward(self, node_h):
        return self.node(node_h)


class GraphNN(nn.Module):
    def __init__(self, dim, num_layers):
        super().__init__()
        self.layers = nn.ModuleList([GraphLayer(dim) for _ in range(num_layers)])

    def step(self, t, node_h):
        for layer in self.layers:
            node_h = checkpoint(layer.step, t, node_h)
        return node_h

    def forward(self, node_h):
        for layer in self.layers:
            node_h = layer(node_h)
        return node_h

    def sequential(self, tensors: dict):
        num_steps = tensors["node_h"].size(1)
        for t in range(num_steps):
            tensors["node_h"] = self.step(t, tensors["node_h"])
        return tensors
"""


def found(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("graph.py", textwrap.dedent(source))]


def test_a_step_checkpointing_each_layers_method_runs_once_per_residue():
    assert ("ZG204", 35) in found(GRAPH)


def test_a_step_handing_the_method_to_a_logger_runs_nothing():
    source = GRAPH.replace("node_h = checkpoint(layer.step, t, node_h)", "print(layer.step, t)")
    assert ("ZG204", 35) not in found(source)
