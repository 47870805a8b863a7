"""A small mixture-of-experts LM whose router weights every expert, so every expert runs on every step."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class Expert(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.up = nn.Linear(hidden, 2 * hidden)
        self.down = nn.Linear(2 * hidden, hidden)

    def forward(self, x):
        return self.down(F.silu(self.up(x)))


class MoEBlock(nn.Module):
    def __init__(self, hidden: int, experts: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(hidden)
        self.router = nn.Linear(hidden, experts, bias=False)
        self.experts = nn.ModuleList(Expert(hidden) for _ in range(experts))

    def forward(self, x):
        h = self.norm(x)
        gates = torch.softmax(self.router(h), dim=-1)
        # Dense routing: every expert runs on every token; the gate only weights its output.
        out = sum(gates[..., i : i + 1] * expert(h) for i, expert in enumerate(self.experts))
        return x + out


class MoELM(nn.Module):
    def __init__(self, vocab: int = 64, hidden: int = 16, layers: int = 2, experts: int = 4) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.blocks = nn.ModuleList(MoEBlock(hidden, experts) for _ in range(layers))
        self.head = nn.Linear(hidden, vocab)

    def forward(self, input_ids, labels):
        x = self.embed(input_ids)
        for block in self.blocks:
            x = block(x)
        logits = self.head(x)
        return F.cross_entropy(logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten())


def build_model() -> MoELM:
    return MoELM()
