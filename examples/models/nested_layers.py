"""A language model with nested layer lists (each layer a `ModuleList` of norm, block and residual) and `autocast`.

* `self.layers` is a `ModuleList` of `ModuleList([norm, block, residual])`; the inner lists are
  never called (the forward unpacks them), so their norm and block each become a unit.
* The rotary angles are computed under `torch.autocast(device_type=x.device.type, enabled=False)`:
  `torch.autocast` rejects the `meta` device, so `zgen plan` traces this model on fake CPU tensors.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class Rotary(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim)), persistent=False)

    def forward(self, x):
        with torch.autocast(device_type=x.device.type, enabled=False):
            t = torch.arange(x.shape[-2], device=x.device, dtype=torch.float32)
            freqs = torch.outer(t, self.inv_freq)
            return torch.cat([freqs, freqs], dim=-1)


def rotate(x, freqs):
    a, b = x.chunk(2, dim=-1)
    return x * freqs.cos() + torch.cat([-b, a], dim=-1) * freqs.sin()


class Attention(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)
        self.rotary = Rotary(dim // heads)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        freqs = self.rotary(q)
        q, k = rotate(q, freqs), rotate(k, freqs)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, n, d))


class FeedForward(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        return self.net(x)


class Residual(nn.Module):
    def forward(self, x, residual):
        return x + residual


class NestedLM(nn.Module):
    def __init__(self, vocab: int = 64, dim: int = 32, depth: int = 2, heads: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList()
        for _ in range(depth):
            for block in (Attention(dim, heads), FeedForward(dim)):
                self.layers.append(nn.ModuleList([nn.LayerNorm(dim), block, Residual()]))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, input_ids, labels):
        x = self.embed(input_ids)
        for norm, block, residual in self.layers:
            x = residual(block(norm(x)), x)
        logits = self.head(self.norm(x))
        return F.cross_entropy(logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten())


def build_model() -> NestedLM:
    return NestedLM()
