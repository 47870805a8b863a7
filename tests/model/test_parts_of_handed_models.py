"""A module a class takes out of a model it is handed and calls in its forward.

MMF's `ModalEmbeddings(config, encoder, embeddings)` keeps `self.word_embeddings = embeddings.word_embeddings`,
BERT's own embedding table, and runs it only when the call is given the optional `start_token`. Assigned to
`self`, that embedding is a submodule of this module too; skipping it on some ranks skips its all-gather. A
setting taken from a handed config (`self.act = config.hidden_act`) is no module.
"""

from __future__ import annotations

from zgen.model import check_source

MODAL = """
from torch import nn


class ModalEmbeddings(nn.Module):
    def __init__(self, config, embeddings):
        super().__init__()
        self.proj = nn.Linear(config.modal_hidden_size, config.hidden_size)
        self.word_embeddings = embeddings.word_embeddings
        self.act = config.hidden_act

    def forward(self, x, start_token=None, scale=None):
        h = self.proj(x)
        if start_token is not None:
            h = h + self.word_embeddings(start_token)
        if scale is not None:
            h = self.act(h) * scale
        return h
"""


def test_an_embedding_taken_from_a_handed_model_is_a_module():
    assert [(f.code, f.line) for f in check_source("mmbt.py", MODAL)] == [("ZG205", 14)]
