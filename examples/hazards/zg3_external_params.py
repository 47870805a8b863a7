"""ZG3xx: a forward that uses another module's parameters.

ZeRO-3 gathers a module's parameters only while that module itself runs.
Reading them anywhere else makes DeepSpeed fetch them on access, blocking
and outside the prefetch schedule (and leaves a runtime without that
fallback with empty tensors). `zgen check examples/hazards/zg3_external_params.py`.
"""

import torch
import torch.nn.functional as F
from torch import nn


class PatchEmbed(nn.Module):
    def __init__(self, dim: int, n_patches: int) -> None:
        super().__init__()
        self.proj = nn.Conv2d(3, dim, kernel_size=16, stride=16)
        self.pos = nn.Parameter(torch.zeros(1, n_patches, dim))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.proj(images).flatten(2).transpose(1, 2)

    def add_positions(self, tokens: torch.Tensor) -> torch.Tensor:
        return tokens + self.pos


class TinyVLM(nn.Module):
    def __init__(self, vocab: int, dim: int, n_patches: int) -> None:
        super().__init__()
        self.patches = PatchEmbed(dim, n_patches)
        self.embed = nn.Embedding(vocab, dim)
        self.mixer = nn.Linear(dim, dim)

    def forward(self, images: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        vision = self.patches.add_positions(self.patches(images))  # ZG303: pos read outside its module
        text = self.embed(ids)
        h = self.mixer.forward(torch.cat([vision, text], dim=1))  # ZG302: skips mixer's hooks
        return F.linear(h, self.embed.weight)  # ZG301: the tied output reads embed's weight
