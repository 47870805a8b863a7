"""Labels a layer embeds are a conditioning input, not the loss's targets: `if augment_labels is not None: emb =
emb + self.map_augment(augment_labels)` skips the mapping on a rank called without them (ZG205), bare `labels` a layer
runs on too; labels that only reach a loss (`if mc_labels is not None: loss = ce(...)`) run no layer."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
from torch import nn


class Mapping(nn.Module):
    def __init__(self, dim, augment_dim):
        super().__init__()
        self.map_layer = nn.Linear(dim, dim)
        self.map_augment = nn.Linear(augment_dim, dim, bias=False) if augment_dim else None
        self.ce = nn.CrossEntropyLoss()

    def forward(self, emb, {name}=None):
        {body}
        return self.map_layer(emb)
"""


def zg205(name: str, body: str) -> list[int]:
    found = check_source("m.py", textwrap.dedent(SOURCE.format(name=name, body=body)))
    return [f.line for f in found if f.code == "ZG205"]


def test_embedded_labels_given_per_call_are_an_optional_input():
    body = "if self.map_augment is not None and augment_labels is not None:\n            emb = emb + self.map_augment(augment_labels)"
    assert zg205("augment_labels", body) == [13]


def test_bare_labels_a_layer_embeds_are_an_optional_input_too():
    # (MAR's `if labels is not None: x = x + self.class_emb(labels)`: the table runs on the labels themselves)
    body = "if labels is not None:\n            emb = emb + self.map_augment(labels)"
    assert zg205("labels", body) == [13]


def test_labels_only_a_loss_reads_run_no_layer():
    body = "if mc_labels is not None:\n            self.loss = self.ce(emb, mc_labels)"
    assert zg205("mc_labels", body) == []
