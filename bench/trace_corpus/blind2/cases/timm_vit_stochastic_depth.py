"""A timm ViT (weight_init='skip') trained with stochastic depth (DropPath), patch dropout and a random
token order inside PatchDropout: all random per rank, but they only mask or subsample tensors; every block
is called on every rank, and the model reads its own cls_token and pos_embed in its own forward."""
import timm
import torch
import torch.nn as nn
import torch.nn.functional as F


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = timm.models.vision_transformer.VisionTransformer(
            img_size=16, patch_size=4, embed_dim=16, depth=2, num_heads=2, mlp_ratio=2.0, num_classes=5,
            drop_path_rate=0.5, patch_drop_rate=0.5, weight_init="skip",
        )

    def forward(self, images, labels):
        return F.cross_entropy(self.net(images), labels)


def build_model():
    return Classifier()


def inputs(batch_size, seq_len, generator):
    return torch.randn(batch_size, 3, 16, 16, generator=generator), torch.randint(0, 5, (batch_size,), generator=generator)
