"""denoising-diffusion-pytorch with self-conditioning: on a per-rank `random() < 0.5` the training step runs the
Unet an extra time (under no_grad) to get the self-conditioning input."""
import torch
from denoising_diffusion_pytorch import GaussianDiffusion, Unet


def build_model():
    unet = Unet(dim=8, dim_mults=(1, 2), channels=3, self_condition=True, attn_dim_head=8, attn_heads=2,
                full_attn=(False, False), flash_attn=False)
    return GaussianDiffusion(unet, image_size=8, timesteps=10)


def inputs(batch_size, seq_len, generator):
    return (torch.rand(batch_size, 3, 8, 8, generator=generator),)
