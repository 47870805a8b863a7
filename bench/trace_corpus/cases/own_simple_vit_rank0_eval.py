"""A vit-pytorch SimpleViT classifier; the entry evaluates on rank 0 only (the other rank skips the forward and
its all-gathers)."""
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from vit_pytorch import SimpleViT


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = SimpleViT(image_size=16, patch_size=8, num_classes=5, dim=16, depth=1, heads=2, mlp_dim=32,
                             dim_head=8)

    def forward(self, images, labels):
        return F.cross_entropy(self.net(images), labels)


def build_model():
    return Classifier()


def inputs(batch_size, seq_len, generator):
    return torch.randn(batch_size, 3, 16, 16, generator=generator), torch.randint(0, 5, (batch_size,), generator=generator)


def entry(model, batch):
    if dist.get_rank() == 0:
        model.eval()
        with torch.no_grad():
            print("eval loss", float(model(*batch)))
        model.train()
