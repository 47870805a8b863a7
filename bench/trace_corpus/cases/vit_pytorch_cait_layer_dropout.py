"""vit-pytorch CaiT with layer_dropout: each forward keeps a random subset of the layers (a per-rank draw)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from vit_pytorch.cait import CaiT


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = CaiT(image_size=16, patch_size=8, num_classes=5, dim=16, depth=3, cls_depth=1, heads=2,
                        mlp_dim=32, dim_head=8, layer_dropout=0.3)

    def forward(self, images, labels):
        return F.cross_entropy(self.net(images), labels)


def build_model():
    return Classifier()


def inputs(batch_size, seq_len, generator):
    return torch.randn(batch_size, 3, 16, 16, generator=generator), torch.randint(0, 5, (batch_size,), generator=generator)
