"""An MoE block that calls only the experts that received tokens.

Which experts run depends on the routing of this rank's tokens, so under
ZeRO-3 ranks run different modules and the all-gathers stop matching (a hang).
On the meta device the `nonzero()` behind `torch.where` has no value to
return: `zgen plan` reports the line instead of a plan.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class HitOnlyMoE(nn.Module):
    def __init__(self, vocab: int = 64, hidden: int = 16, experts: int = 4) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.router = nn.Linear(hidden, experts, bias=False)
        self.experts = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(experts))
        self.head = nn.Linear(hidden, vocab)

    def forward(self, input_ids, labels):
        x = self.embed(input_ids)
        choice = self.router(x).argmax(-1)
        out = torch.zeros_like(x)
        for i, expert in enumerate(self.experts):
            rows = torch.where(choice == i)
            if rows[0].numel() == 0:
                continue
            out[rows] = expert(x[rows])
        logits = self.head(x + out)
        return F.cross_entropy(logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten())


def build_model() -> HitOnlyMoE:
    return HitOnlyMoE()
