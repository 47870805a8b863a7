"""diffusers UNet2DModel with diffusers' EMAModel; the entry creates the EMA (cloning the model's parameters) and,
for evaluation, copies the averaged weights into the model with `copy_to`."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from diffusers import UNet2DModel
from diffusers.training_utils import EMAModel


class NoisePredictor(nn.Module):
    def __init__(self):
        super().__init__()
        self.unet = UNet2DModel(
            sample_size=8, in_channels=3, out_channels=3, layers_per_block=1, block_out_channels=(8, 16),
            down_block_types=("DownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "UpBlock2D"),
            norm_num_groups=4,
        )

    def forward(self, images, noise, timesteps):
        return F.mse_loss(self.unet(images + noise, timesteps).sample, noise)


def build_model():
    return NoisePredictor()


def inputs(batch_size, seq_len, generator):
    images = torch.randn(batch_size, 3, 8, 8, generator=generator)
    noise = torch.randn(batch_size, 3, 8, 8, generator=generator)
    return images, noise, torch.randint(0, 1000, (batch_size,), generator=generator)


def entry(model, batch):
    ema = EMAModel(model.unet.parameters(), decay=0.999)
    ema.copy_to(model.unet.parameters())
