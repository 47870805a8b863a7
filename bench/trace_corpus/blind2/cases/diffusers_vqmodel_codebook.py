"""diffusers VQModel (VQ-GAN style autoencoder) trained on reconstruction + commitment loss. VectorQuantizer's
__init__ re-initialises its built codebook Embedding's weight, and its forward measures distances to
`self.embedding.weight` before it calls the embedding module."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from diffusers import VQModel


class Reconstruct(nn.Module):
    def __init__(self):
        super().__init__()
        self.vq = VQModel(
            in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
            up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"), block_out_channels=(8, 16),
            layers_per_block=1, latent_channels=4, num_vq_embeddings=16, norm_num_groups=4, sample_size=16,
        )

    def forward(self, images):
        out = self.vq(images)
        return F.mse_loss(out.sample, images) + out.commit_loss.mean()


def build_model():
    return Reconstruct()


def inputs(batch_size, seq_len, generator):
    return (torch.rand(batch_size, 3, 16, 16, generator=generator) * 2 - 1,)
