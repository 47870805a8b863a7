"""A timm ViT backbone (built with weight_init='skip') used for features through `backbone.forward_features(x)`,
a non-forward method that reads the backbone's own cls_token and pos_embed without its hooks."""
import timm
import torch
import torch.nn as nn
import torch.nn.functional as F


class Probe(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = timm.models.vision_transformer.VisionTransformer(
            img_size=16, patch_size=8, embed_dim=16, depth=1, num_heads=2, mlp_ratio=2.0, num_classes=0,
            weight_init="skip",
        )
        self.head = nn.Linear(16, 5)

    def forward(self, images, labels):
        tokens = self.backbone.forward_features(images)
        return F.cross_entropy(self.head(tokens[:, 0]), labels)


def build_model():
    return Probe()


def inputs(batch_size, seq_len, generator):
    return torch.randn(batch_size, 3, 16, 16, generator=generator), torch.randint(0, 5, (batch_size,), generator=generator)
