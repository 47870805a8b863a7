"""A two-tower contrastive model (CLIP's shape): features out, the loss over every rank's batch.

The text tower keeps its blocks in a `ModuleList`, the image tower in an `nn.Sequential`; both
stacks get units. The forward returns a dataclass of features, so training needs `--loss`:
`clip_loss` gathers the features of all ranks with `zgen.runtime.gather.all_gather_with_grad`
and every rank computes the symmetric cross-entropy over the global batch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from zgen.runtime.gather import all_gather_with_grad

VOCAB, IMAGE, PATCH = 64, 8, 4


class Block(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        return x + self.ff(self.norm(x))


class ImageBlock(Block):
    pass


class TextTower(nn.Module):
    def __init__(self, dim: int, depth: int, out: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, dim)
        self.blocks = nn.ModuleList(Block(dim) for _ in range(depth))
        self.proj = nn.Linear(dim, out, bias=False)

    def forward(self, ids):
        x = self.embed(ids)
        for block in self.blocks:
            x = block(x)
        return self.proj(x.mean(dim=1))


class ImageTower(nn.Module):
    def __init__(self, dim: int, depth: int, out: int) -> None:
        super().__init__()
        self.patch = nn.Linear(3 * PATCH * PATCH, dim)
        self.blocks = nn.Sequential(*(ImageBlock(dim) for _ in range(depth)))
        self.proj = nn.Linear(dim, out, bias=False)

    def forward(self, pixels):
        b = len(pixels)
        patches = pixels.unfold(2, PATCH, PATCH).unfold(3, PATCH, PATCH).permute(0, 2, 3, 1, 4, 5).reshape(b, -1, 3 * PATCH * PATCH)
        return self.proj(self.blocks(self.patch(patches)).mean(dim=1))


@dataclass
class Features:
    text: torch.Tensor
    image: torch.Tensor
    logit_scale: torch.Tensor


class TwoTower(nn.Module):
    def __init__(self, dim: int = 32, depth: int = 2, out: int = 16) -> None:
        super().__init__()
        self.text = TextTower(dim, depth, out)
        self.image = ImageTower(dim, depth, out)
        self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))

    def forward(self, input_ids, pixels):
        return Features(F.normalize(self.text(input_ids), dim=-1), F.normalize(self.image(pixels), dim=-1),
                        self.logit_scale)


def build_model() -> TwoTower:
    return TwoTower()


def make_inputs(batch_size: int, seq_len: int, generator: torch.Generator) -> dict:
    """Pairs whose caption tokens and image brightness both come from one hidden class."""
    cls = torch.randint(0, 4, (batch_size,), generator=generator)
    ids = (cls[:, None] * 16 + torch.randint(0, 16, (batch_size, seq_len), generator=generator)) % VOCAB
    pixels = torch.randn(batch_size, 3, IMAGE, IMAGE, generator=generator) + cls[:, None, None, None].float()
    return {"input_ids": ids, "pixels": pixels}


def clip_loss(outputs: Features, batch) -> torch.Tensor:
    """Symmetric InfoNCE over the global batch (every rank's pairs)."""
    text, image = all_gather_with_grad(outputs.text), all_gather_with_grad(outputs.image)
    logits = outputs.logit_scale.exp() * text @ image.t()
    target = torch.arange(len(text), device=text.device)
    return (F.cross_entropy(logits, target) + F.cross_entropy(logits.t(), target)) / 2
