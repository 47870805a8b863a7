"""A diffusers UNet2DConditionModel denoising step; the entry runs diffusers' `cast_training_params` (as its
fine-tuning scripts do before building the optimizer), which rewrites the `.data` of every trainable
parameter outside any forward."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from diffusers import UNet2DConditionModel
from diffusers.training_utils import cast_training_params


class Denoise(nn.Module):
    def __init__(self):
        super().__init__()
        self.unet = UNet2DConditionModel(
            sample_size=8, in_channels=4, out_channels=4, layers_per_block=1, block_out_channels=(8, 16),
            down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
            cross_attention_dim=8, attention_head_dim=4, norm_num_groups=4,
        )

    def forward(self, noisy, timesteps, text, noise):
        return F.mse_loss(self.unet(noisy, timesteps, encoder_hidden_states=text).sample, noise)


def build_model():
    return Denoise()


def inputs(batch_size, seq_len, generator):
    noisy = torch.randn(batch_size, 4, 8, 8, generator=generator)
    timesteps = torch.randint(0, 1000, (batch_size,), generator=generator)
    text = torch.randn(batch_size, seq_len, 8, generator=generator)
    return noisy, timesteps, text, torch.randn(batch_size, 4, 8, 8, generator=generator)


def entry(model, batch):
    cast_training_params(model.unet, dtype=torch.float32)
