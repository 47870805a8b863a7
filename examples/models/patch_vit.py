"""A vision transformer the way timm writes one: `nn.Sequential` blocks and a parent's init.

* The blocks live in an `nn.Sequential`, not a `ModuleList`: each block is still a unit.
* `init_weights()` on the model re-initialises every `nn.Linear` of every block after their own
  `reset_parameters()` ran (a parent writing into its children's units), and draws the class
  token and position embedding, which no child owns. zgen's runtime applies it as `model.apply`
  would, whatever the plan: no `--init` is needed.
* The forward returns logits; `cross_entropy` is the `--loss` for it.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

CLASSES, IMAGE, PATCH = 5, 16, 4


class Block(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class PatchViT(nn.Module):
    def __init__(self, dim: int = 32, depth: int = 3, heads: int = 2) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, dim, PATCH, stride=PATCH)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, (IMAGE // PATCH) ** 2 + 1, dim))
        self.blocks = nn.Sequential(*(Block(dim, heads) for _ in range(depth)))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, CLASSES)
        self.init_weights()

    def init_weights(self) -> None:
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        nn.init.normal_(self.cls_token, std=1e-6)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                nn.init.zeros_(m.bias)

    def forward(self, pixels, labels=None):
        # `labels` travel with the batch for the `--loss` function; the model returns logits.
        x = self.patch(pixels).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(len(x), -1, -1), x], dim=1) + self.pos_embed
        return self.head(self.norm(self.blocks(x))[:, 0])


def build_model() -> PatchViT:
    return PatchViT()


def make_inputs(batch_size: int, seq_len: int, generator: torch.Generator) -> dict:
    """Images and labels (`seq_len` is unused): the class is the colour channel with the brightest mean."""
    pixels = torch.randn(batch_size, 3, IMAGE, IMAGE, generator=generator)
    labels = pixels.mean(dim=(2, 3)).argmax(dim=1)
    return {"pixels": pixels, "labels": labels}


def cross_entropy(outputs, batch):
    """The `--loss`: logits against the batch's labels."""
    return F.cross_entropy(outputs, batch["labels"])
