"""A vit-pytorch ViT classifier; the entry clips gradients with torch.nn.utils.clip_grad_norm_ on the raw
parameters, as a hand-written training loop does (the engine's own clipping is the ZeRO-3 way)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from vit_pytorch import ViT


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = ViT(image_size=16, patch_size=8, num_classes=5, dim=16, depth=1, heads=2, mlp_dim=32, dim_head=8)

    def forward(self, images, labels):
        return F.cross_entropy(self.net(images), labels)


def build_model():
    return Classifier()


def inputs(batch_size, seq_len, generator):
    return torch.randn(batch_size, 3, 16, 16, generator=generator), torch.randint(0, 5, (batch_size,), generator=generator)


def entry(model, batch):
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
