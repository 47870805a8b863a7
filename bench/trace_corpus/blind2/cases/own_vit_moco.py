"""Our MoCo-style contrastive wrapper around two transformers ViT encoders, written as MoCo's reference code
does: __init__ copies the query encoder's parameters into the key encoder, and forward updates the key encoder
by momentum (a loop over both encoders' parameters) before calling it."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from transformers import ViTConfig, ViTModel


def encoder():
    return ViTModel(ViTConfig(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
                              image_size=16, patch_size=8), add_pooling_layer=False)


class MoCo(nn.Module):
    def __init__(self, momentum=0.99, temperature=0.2):
        super().__init__()
        self.encoder_q = encoder()
        self.encoder_k = encoder()
        for param_q, param_k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
            param_k.data.copy_(param_q.data)
            param_k.requires_grad = False
        self.momentum = momentum
        self.temperature = temperature

    @torch.no_grad()
    def _momentum_update_key_encoder(self):
        for param_q, param_k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
            param_k.data = param_k.data * self.momentum + param_q.data * (1.0 - self.momentum)

    def forward(self, view_one, view_two):
        q = F.normalize(self.encoder_q(view_one).last_hidden_state[:, 0], dim=-1)
        with torch.no_grad():
            self._momentum_update_key_encoder()
            k = F.normalize(self.encoder_k(view_two).last_hidden_state[:, 0], dim=-1)
        logits = q @ k.t() / self.temperature
        return F.cross_entropy(logits, torch.arange(q.shape[0]))


def build_model():
    return MoCo()


def inputs(batch_size, seq_len, generator):
    images = torch.randn(batch_size, 3, 16, 16, generator=generator)
    return images, images + 0.1 * torch.randn(batch_size, 3, 16, 16, generator=generator)
