"""denoising-diffusion-pytorch trained with an ema-pytorch EMA (as its Trainer does): the entry builds the EMA
(a deepcopy of the model) and updates it (copying the model's parameters)."""
import torch
from denoising_diffusion_pytorch import GaussianDiffusion, Unet
from ema_pytorch import EMA


def build_model():
    unet = Unet(dim=8, dim_mults=(1, 2), channels=3, attn_dim_head=8, attn_heads=2, flash_attn=False)
    return GaussianDiffusion(unet, image_size=8, timesteps=10)


def inputs(batch_size, seq_len, generator):
    return (torch.rand(batch_size, 3, 8, 8, generator=generator),)


def entry(model, batch):
    ema = EMA(model, beta=0.995, update_every=1)
    ema.update()
