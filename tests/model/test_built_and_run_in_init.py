"""A module built and run on the spot in a constructor (`X_init = ProteinBackbone(n)()`) computes under `zero.Init`
with the placeholders of the module just built (chroma's Cartesian backbone takes its start from an internal-
coordinate one)."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

BACKBONE = """
import torch
from torch import nn


class Backbone(nn.Module):
    def __init__(self, num_residues, internal=True, X_init=None):
        super().__init__()
        if internal:
            self.phi = nn.Parameter(torch.zeros(num_residues))
        else:
            if X_init is None:
                X_init = Backbone(num_residues, internal=True)()
            self.X = nn.Parameter(X_init)

    def forward(self):
        return torch.stack([self.phi.cos(), self.phi.sin()], -1)
"""


def found(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("backbone.py", textwrap.dedent(source))]


def test_a_module_built_and_run_in_a_constructor_computes_with_placeholders():
    assert ("ZG110", 13) in found(BACKBONE)


def test_a_layer_without_parameters_built_and_run_computes_with_none():
    source = BACKBONE.replace("Backbone(num_residues, internal=True)()", "nn.Softplus()(torch.zeros(num_residues, 2))")
    assert ("ZG110", 13) not in found(source)
