"""vit-pytorch's ViT with patch dropout: each rank keeps a random subset of patches (torch.randn top-k), which
changes the token count but not which modules run; the ViT reads its own cls_token and pos_embedding in its
own forward."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from vit_pytorch.vit_with_patch_dropout import ViT


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.vit = ViT(image_size=16, patch_size=4, num_classes=5, dim=16, depth=2, heads=2, mlp_dim=32,
                       dim_head=8, patch_dropout=0.5)

    def forward(self, images, labels):
        return F.cross_entropy(self.vit(images), labels)


def build_model():
    return Classifier()


def inputs(batch_size, seq_len, generator):
    return torch.randn(batch_size, 3, 16, 16, generator=generator), torch.randint(0, 5, (batch_size,), generator=generator)
