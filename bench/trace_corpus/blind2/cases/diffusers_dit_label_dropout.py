"""A diffusers DiT (class-conditional diffusion transformer) trained with classifier-free-guidance label
dropout: each rank drops a random subset of class labels with torch.rand, replacing them by the null class
through torch.where; the label embedding is called either way."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from diffusers import DiTTransformer2DModel


class DiTTraining(nn.Module):
    def __init__(self):
        super().__init__()
        self.dit = DiTTransformer2DModel(
            num_attention_heads=2, attention_head_dim=8, in_channels=4, out_channels=4, num_layers=2,
            sample_size=8, patch_size=2, num_embeds_ada_norm=10, norm_num_groups=4,
        )

    def forward(self, noisy, timesteps, class_labels, noise):
        pred = self.dit(noisy, timestep=timesteps, class_labels=class_labels).sample
        return F.mse_loss(pred, noise)


def build_model():
    return DiTTraining()


def inputs(batch_size, seq_len, generator):
    noisy = torch.randn(batch_size, 4, 8, 8, generator=generator)
    timesteps = torch.randint(0, 1000, (batch_size,), generator=generator)
    labels = torch.randint(0, 10, (batch_size,), generator=generator)
    return noisy, timesteps, labels, torch.randn(batch_size, 4, 8, 8, generator=generator)
