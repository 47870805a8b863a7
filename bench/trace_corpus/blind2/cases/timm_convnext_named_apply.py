"""timm ConvNeXt image classification. ConvNeXt.__init__ ends with `named_apply(_init_weights, self)`, timm's own
recursive helper (not nn.Module.apply), which writes every built conv and linear child's weight."""
import timm
import torch
import torch.nn as nn
import torch.nn.functional as F


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = timm.models.convnext.ConvNeXt(depths=(1, 1, 1, 1), dims=(8, 8, 16, 16), num_classes=5, drop_path_rate=0.1)

    def forward(self, images, labels):
        return F.cross_entropy(self.net(images), labels)


def build_model():
    return Classifier()


def inputs(batch_size, seq_len, generator):
    return torch.randn(batch_size, 3, 32, 32, generator=generator), torch.randint(0, 5, (batch_size,), generator=generator)
