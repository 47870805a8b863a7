"""A trainer that is no module, holding a model it was handed, calls a method of the model that writes the model's
parameters (`self.model.normalize_parameters()` after each epoch, which renormalises an embedding table through
`.data`): under ZeRO-3 the method runs outside any forward, on partitioned placeholders, and the writes are lost
(ZG101 at the call). A method of the model that writes no parameter (it resets a cache buffer) is no write."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
import torch
from torch import nn
from torch.nn.functional import normalize


class TransE(nn.Module):
    def __init__(self, n_ent, dim):
        super().__init__()
        self.ent_emb = nn.Embedding(n_ent, dim)
        self.register_buffer("seen", torch.zeros(n_ent))

    def forward(self, h, t):
        return (self.ent_emb(h) - self.ent_emb(t)).norm(dim=-1)

    def normalize_parameters(self):
        self.ent_emb.weight.data = normalize(self.ent_emb.weight.data, p=2, dim=1)

    def reset_counts(self):
        self.seen.zero_()


class Trainer:
    def __init__(self, model, optimizer, loader, n_epochs):
        self.model = model
        self.optimizer = optimizer
        self.loader = loader
        self.n_epochs = n_epochs

    def run(self):
        for epoch in range(self.n_epochs):
            for h, t in self.loader:
                self.optimizer.zero_grad()
                self.model(h, t).mean().backward()
                self.optimizer.step()
            self.model.{method}()
"""

CALL_LINE = 36


def zg1_at_the_call(method: str) -> list[str]:
    found = check_source("kge.py", textwrap.dedent(SOURCE.format(method=method)))
    return [f.code for f in found if f.line == CALL_LINE and f.code.startswith("ZG1")]


def test_a_trainer_calling_the_models_writing_method_loses_the_writes():
    assert zg1_at_the_call("normalize_parameters") == ["ZG101"]


def test_a_method_writing_only_a_buffer_is_no_parameter_write():
    assert zg1_at_the_call("reset_counts") == []
