"""Clean: denoising-diffusion-pytorch GaussianDiffusion around a Unet without self-conditioning; the random
timestep and noise change data only, every rank calls the same modules."""
import torch
from denoising_diffusion_pytorch import GaussianDiffusion, Unet


def build_model():
    unet = Unet(dim=8, dim_mults=(1, 2), channels=3, self_condition=False, attn_dim_head=8, attn_heads=2,
                full_attn=(False, True), flash_attn=False)
    return GaussianDiffusion(unet, image_size=8, timesteps=10)


def inputs(batch_size, seq_len, generator):
    return (torch.rand(batch_size, 3, 8, 8, generator=generator),)
