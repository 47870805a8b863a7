"""Our adaptive-computation (ACT / Universal Transformer style) image classifier built from timm's ViT block
and patch embedding: one shared block is applied until the accumulated halting probability of the batch
passes a threshold, so the number of block calls depends on each rank's data."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from timm.layers import PatchEmbed
from timm.models.vision_transformer import Block

MAX_STEPS = 6
THRESHOLD = 0.99


class AdaptiveViT(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch_embed = PatchEmbed(img_size=16, patch_size=8, in_chans=3, embed_dim=16)
        self.block = Block(dim=16, num_heads=2, mlp_ratio=2.0)
        self.halt = nn.Linear(16, 1)
        self.head = nn.Linear(16, 5)

    def forward(self, images, labels):
        x = self.patch_embed(images)
        halted = torch.zeros(())
        steps = 0
        while halted.item() < THRESHOLD and steps < MAX_STEPS:
            x = self.block(x)
            halted = halted + torch.sigmoid(self.halt(x.mean(dim=1))).mean()
            steps += 1
        return F.cross_entropy(self.head(x.mean(dim=1)), labels)


def build_model():
    return AdaptiveViT()


def inputs(batch_size, seq_len, generator):
    images = torch.randn(batch_size, 3, 16, 16, generator=generator) * 3
    return images, torch.randint(0, 5, (batch_size,), generator=generator)
