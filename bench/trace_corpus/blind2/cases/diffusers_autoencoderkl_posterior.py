"""diffusers AutoencoderKL trained as a VAE: reconstruction of a sample drawn from the posterior plus the KL
term. The posterior sample is random per rank, but it changes values only; encode/decode are the model's own
methods called from its own forward, and every block is called as a module."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from diffusers import AutoencoderKL


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.vae = AutoencoderKL(
            in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
            up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"), block_out_channels=(8, 16),
            layers_per_block=1, latent_channels=4, norm_num_groups=4, sample_size=16,
        )

    def forward(self, images):
        posterior = self.vae.encode(images).latent_dist
        recon = self.vae.decode(posterior.sample()).sample
        return F.mse_loss(recon, images) + 1e-6 * posterior.kl().mean()


def build_model():
    return VAE()


def inputs(batch_size, seq_len, generator):
    return (torch.rand(batch_size, 3, 16, 16, generator=generator) * 2 - 1,)
