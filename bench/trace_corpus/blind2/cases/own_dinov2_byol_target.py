"""Our BYOL-style trainer around two transformers DINOv2 encoders (online and target); after each optimizer
step the entry moves the target towards the online network with `torch._foreach_lerp_` over both parameter
lists, outside any forward."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from transformers import Dinov2Config, Dinov2Model


def branch():
    return Dinov2Model(Dinov2Config(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, mlp_ratio=2,
                                    image_size=16, patch_size=8))


class BYOL(nn.Module):
    def __init__(self, tau=0.99):
        super().__init__()
        self.online = branch()
        self.predictor = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16))
        self.target = branch()
        self.target.requires_grad_(False)
        self.tau = tau

    def forward(self, view_one, view_two):
        p = F.normalize(self.predictor(self.online(view_one).pooler_output), dim=-1)
        with torch.no_grad():
            z = F.normalize(self.target(view_two).pooler_output, dim=-1)
        return (2 - 2 * (p * z).sum(dim=-1)).mean()


def build_model():
    return BYOL()


def inputs(batch_size, seq_len, generator):
    images = torch.randn(batch_size, 3, 16, 16, generator=generator)
    return images, images + 0.1 * torch.randn(batch_size, 3, 16, 16, generator=generator)


def entry(model, batch):
    with torch.no_grad():
        target = list(model.target.parameters())
        online = list(model.online.parameters())
        torch._foreach_lerp_(target, online, 1.0 - model.tau)
