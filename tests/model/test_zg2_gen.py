"""ZG2 facts found missing on unseen code (blind12 and probes of the same facts in other shapes): a single large layer
skipped on an optional input, a presence test beside a test of the layer's own presence, ..."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

HEAD = """
import random
import numpy as np
import torch
from torch import nn
"""


def codes(source: str) -> list[str]:
    return [f.code for f in check_source("m.py", HEAD + textwrap.dedent(source))]


# A single layer run on an optional input: a rank called without it skips the layer's gather, unless ZeRO-3 keeps the
# layer gathered anyway (a weight below the persistence threshold gathers nothing).
OPTIONAL_LAYER = """
class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.cond = {layer}

    def forward(self, x, context=None):
        x = self.proj(x)
        if context is not None:
            x = x + self.cond(context)
        return x
"""


def test_a_large_single_layer_run_on_an_optional_input_is_skipped_per_rank():
    assert codes(OPTIONAL_LAYER.format(layer="nn.Linear(1024, 1024)")) == ["ZG205"]
    assert codes(OPTIONAL_LAYER.format(layer="nn.Linear(dim, dim)")) == ["ZG205"]


def test_a_layer_kept_gathered_by_its_size_gathers_nothing_when_skipped():
    assert codes(OPTIONAL_LAYER.format(layer="nn.Linear(16, 16)")) == []


def test_a_layer_built_under_a_setting_and_gated_on_the_input_alone_is_the_callers_convention():
    source = OPTIONAL_LAYER.format(layer="nn.Linear(dim, dim) if dim > 8 else None")
    assert codes(source) == []


# `self.emb is not None and attr is not None`: the layer's presence (the configuration) beside the input's.
STATE_EMBEDDING = """
class Net(nn.Module):
    def __init__(self, n_states, dim):
        super().__init__()
        self.atoms = nn.Embedding(100, dim)
        self.state_embedding = nn.Embedding(n_states, dim) if n_states else None

    def forward(self, g, state_attr=None):
        h = self.atoms(g)
        if self.state_embedding is not None and {test}:
            state_attr = self.state_embedding(state_attr)
        else:
            state_attr = None
        return h, state_attr
"""


def test_an_optional_input_tested_beside_the_layers_presence_gates_the_layer():
    assert codes(STATE_EMBEDDING.format(test="state_attr is not None")) == ["ZG205"]


def test_a_test_of_the_configuration_alone_gates_nothing_per_rank():
    assert codes(STATE_EMBEDDING.format(test="self.training")) == []
