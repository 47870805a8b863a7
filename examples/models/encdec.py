"""A small encoder-decoder (T5-like) whose encoder and decoder share one embedding module."""

from __future__ import annotations

import torch.nn.functional as F
from torch import nn


class EncoderLayer(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(hidden, 2, batch_first=True)
        self.ff = nn.Linear(hidden, hidden)

    def forward(self, x):
        x = x + self.attn(x, x, x, need_weights=False)[0]
        return x + self.ff(F.relu(x))


class DecoderLayer(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.self_attn = nn.MultiheadAttention(hidden, 2, batch_first=True)
        self.cross_attn = nn.MultiheadAttention(hidden, 2, batch_first=True)
        self.ff = nn.Linear(hidden, hidden)

    def forward(self, x, memory):
        x = x + self.self_attn(x, x, x, need_weights=False)[0]
        x = x + self.cross_attn(x, memory, memory, need_weights=False)[0]
        return x + self.ff(F.relu(x))


class Encoder(nn.Module):
    def __init__(self, embed: nn.Embedding, hidden: int, layers: int) -> None:
        super().__init__()
        self.embed = embed
        self.layers = nn.ModuleList(EncoderLayer(hidden) for _ in range(layers))
        self.norm = nn.LayerNorm(hidden)

    def forward(self, ids):
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)


class Decoder(nn.Module):
    def __init__(self, embed: nn.Embedding, hidden: int, layers: int) -> None:
        super().__init__()
        self.embed = embed
        self.layers = nn.ModuleList(DecoderLayer(hidden) for _ in range(layers))
        self.norm = nn.LayerNorm(hidden)

    def forward(self, ids, memory):
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x, memory)
        return self.norm(x)


class EncoderDecoder(nn.Module):
    def __init__(self, vocab: int = 96, hidden: int = 32, enc_layers: int = 2, dec_layers: int = 2) -> None:
        super().__init__()
        self.shared = nn.Embedding(vocab, hidden)
        self.encoder = Encoder(self.shared, hidden, enc_layers)
        self.decoder = Decoder(self.shared, hidden, dec_layers)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, input_ids, labels):
        memory = self.encoder(input_ids)
        x = self.decoder(labels[:, :-1], memory)
        logits = self.lm_head(x)
        return F.cross_entropy(logits.flatten(0, 1), labels[:, 1:].flatten())


def build_model() -> EncoderDecoder:
    return EncoderDecoder()


def init_weights(module: nn.Module) -> None:
    """Initialise one module built on the meta device (`zgen emit --init examples/models/encdec.py:init_weights`).

    `nn.MultiheadAttention` initialises itself in `_reset_parameters()`, not in the public
    `reset_parameters()` that a runtime calls by default.
    """
    if isinstance(module, nn.MultiheadAttention):
        module._reset_parameters()
    elif hasattr(module, "reset_parameters"):
        module.reset_parameters()
