"""Forwards that read a child's weight instead of calling the child.

`Block.forward` reads `self.proj.weight` directly: under DeepSpeed ZeRO-3 that
weight is only gathered when `proj` itself runs, but with zgen's plan the
whole block is one unit, so the read is safe. `ChildWeightLM.forward` reads
`self.blocks[0].proj.weight` for its output projection, long after block 0
ran: the plan must keep block 0's unit gathered while the root runs (an
external parameter of the root unit).
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(hidden)
        self.proj = nn.Linear(hidden, hidden, bias=False)
        self.gate = nn.Linear(hidden, hidden)

    def forward(self, x):
        h = self.norm(x)
        return x + F.linear(h, self.proj.weight) * F.sigmoid(self.gate(h))


class ChildWeightLM(nn.Module):
    def __init__(self, vocab: int = 64, hidden: int = 16, layers: int = 3) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.blocks = nn.ModuleList(Block(hidden) for _ in range(layers))
        self.head = nn.Linear(hidden, vocab)

    def forward(self, input_ids, labels):
        x = self.embed(input_ids)
        for block in self.blocks:
            x = block(x)
        x = F.linear(x, self.blocks[0].proj.weight)  # reuses block 0's projection
        logits = self.head(x)
        return F.cross_entropy(logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten())


def build_model() -> ChildWeightLM:
    return ChildWeightLM()
