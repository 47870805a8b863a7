"""ZG2xx: control flow that makes ranks run different submodules.

Every submodule call under ZeRO-3 all-gathers that module's parameters, a
collective all ranks must join. Each model below decides per rank whether a
submodule runs, so sooner or later the ranks wait on each other forever
(`zgen check examples/hazards/zg2_divergent_flow.py`).
"""

import random

import torch
import torch.distributed as dist
from torch import nn


class Block(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.relu(self.fc(x))


class LayerDropEncoder(nn.Module):
    def __init__(self, dim: int, depth: int, layerdrop: float) -> None:
        super().__init__()
        self.layers = nn.ModuleList([Block(dim) for _ in range(depth)])
        self.probe = nn.Linear(dim, 1)
        self.layerdrop = layerdrop

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            if self.training and random.random() < self.layerdrop:  # ZG202: each rank draws its own
                continue
            x = layer(x)
        if dist.get_rank() == 0:  # ZG201: only rank 0 gathers the probe
            x = x + self.probe(x)
        return x


class HitOnlyMoE(nn.Module):
    def __init__(self, dim: int, n_experts: int) -> None:
        super().__init__()
        self.router = nn.Linear(dim, n_experts)
        self.experts = nn.ModuleList([Block(dim) for _ in range(n_experts)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        choice = self.router(x).argmax(-1)
        out = torch.zeros_like(x)
        for expert_idx in choice.unique():  # ZG203: only experts this rank routed to
            rows = torch.where(choice == expert_idx)[0]
            out[rows] = self.experts[expert_idx](x[rows])
        return out


class EarlyExit(nn.Module):
    def __init__(self, dim: int, depth: int) -> None:
        super().__init__()
        self.layers = nn.ModuleList([Block(dim) for _ in range(depth)])
        self.exit_head = nn.Linear(dim, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
            if (self.exit_head(x).softmax(-1)[..., 1] > 0.9).all():  # ZG204: ranks exit at different depths
                break
        return x
