"""speechbrain's HiFi-GAN generator trained on a reconstruction loss: its speechbrain Conv1d/ConvTranspose1d
layers are built with weight_norm=True, which re-parametrises each built torch convolution's weight
(`nn.utils.parametrizations.weight_norm`) inside the wrapper's constructor."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from speechbrain.lobes.models.HifiGAN import HifiganGenerator


class Vocoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.generator = HifiganGenerator(
            in_channels=8, out_channels=1, resblock_type="1", resblock_dilation_sizes=[[1, 3, 5]],
            resblock_kernel_sizes=[3], upsample_kernel_sizes=[4, 4], upsample_initial_channel=16,
            upsample_factors=[2, 2],
        )

    def forward(self, mel, audio):
        return F.l1_loss(self.generator(mel), audio)


def build_model():
    return Vocoder()


def inputs(batch_size, seq_len, generator):
    mel = torch.randn(batch_size, 8, seq_len, generator=generator)
    return mel, torch.randn(batch_size, 1, seq_len * 4, generator=generator)
