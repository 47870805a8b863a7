"""Clean: a diffusers UNet2DModel trained to predict noise; every block is called as a module."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from diffusers import UNet2DModel


class NoisePredictor(nn.Module):
    def __init__(self):
        super().__init__()
        self.unet = UNet2DModel(
            sample_size=8, in_channels=3, out_channels=3, layers_per_block=1, block_out_channels=(8, 16),
            down_block_types=("DownBlock2D", "AttnDownBlock2D"), up_block_types=("AttnUpBlock2D", "UpBlock2D"),
            norm_num_groups=4, attention_head_dim=8,
        )

    def forward(self, images, noise, timesteps):
        noisy = images + noise
        return F.mse_loss(self.unet(noisy, timesteps).sample, noise)


def build_model():
    return NoisePredictor()


def inputs(batch_size, seq_len, generator):
    images = torch.randn(batch_size, 3, 8, 8, generator=generator)
    noise = torch.randn(batch_size, 3, 8, 8, generator=generator)
    return images, noise, torch.randint(0, 1000, (batch_size,), generator=generator)
