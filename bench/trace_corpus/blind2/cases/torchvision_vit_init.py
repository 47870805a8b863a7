"""torchvision's VisionTransformer image classification. Building it initialises built children from their
parents: MLPBlock re-initialises its Linear layers in a `self.modules()` loop, and VisionTransformer.__init__
writes its `conv_proj` and `heads.head` weights."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torchvision.models.vision_transformer import VisionTransformer


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = VisionTransformer(image_size=16, patch_size=8, num_layers=1, num_heads=2, hidden_dim=16,
                                     mlp_dim=32, num_classes=5)

    def forward(self, images, labels):
        return F.cross_entropy(self.net(images), labels)


def build_model():
    return Classifier()


def inputs(batch_size, seq_len, generator):
    return torch.randn(batch_size, 3, 16, 16, generator=generator), torch.randint(0, 5, (batch_size,), generator=generator)
