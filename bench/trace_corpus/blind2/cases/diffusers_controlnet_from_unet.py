"""A diffusers ControlNet trained beside its UNet2DConditionModel, built as diffusers' ControlNet training script
does with `ControlNetModel.from_unet(unet)`: the ControlNet zero-initialises its built output convolutions
(`zero_module`), and `from_unet` copies the UNet's built blocks with `load_state_dict(state_dict())`."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from diffusers import ControlNetModel, UNet2DConditionModel

BLOCKS = dict(
    sample_size=8, in_channels=4, out_channels=4, layers_per_block=1, block_out_channels=(8, 16),
    down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
    cross_attention_dim=8, attention_head_dim=4, norm_num_groups=4,
)


class ControlTraining(nn.Module):
    def __init__(self):
        super().__init__()
        self.unet = UNet2DConditionModel(**BLOCKS)
        self.controlnet = ControlNetModel.from_unet(self.unet, conditioning_embedding_out_channels=(4, 8))
        self.unet.requires_grad_(False)

    def forward(self, noisy, timesteps, text, condition, noise):
        down, mid = self.controlnet(noisy, timesteps, encoder_hidden_states=text, controlnet_cond=condition,
                                    return_dict=False)
        pred = self.unet(noisy, timesteps, encoder_hidden_states=text, down_block_additional_residuals=down,
                         mid_block_additional_residual=mid).sample
        return F.mse_loss(pred, noise)


def build_model():
    return ControlTraining()


def inputs(batch_size, seq_len, generator):
    noisy = torch.randn(batch_size, 4, 8, 8, generator=generator)
    timesteps = torch.randint(0, 1000, (batch_size,), generator=generator)
    text = torch.randn(batch_size, seq_len, 8, generator=generator)
    condition = torch.rand(batch_size, 3, 16, 16, generator=generator)
    return noisy, timesteps, text, condition, torch.randn(batch_size, 4, 8, 8, generator=generator)
