"""A parameter handed to a tensor library's function is read (blind8 titans_pytorch neural_memory.py:387).

The fact: einops' functions (`repeat`, `rearrange`, `reduce`, `einsum`) compute with the tensors they are handed,
as torch's do (`known.TENSOR_FUNCTIONS`): `repeat(p, '... -> h ...', h=heads)` of a built model's parameter,
outside any forward, reads a partitioned placeholder.

Safe look-alikes: einops on activations or data, and on a module's own parameter in its forward.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = textwrap.dedent("""
    import torch
    from torch import nn
    from einops import repeat, rearrange
    import einops


    class Memory(nn.Module):
        def __init__(self, model: nn.Module, heads=2):
            super().__init__()
            self.model = model
            weights = [repeat(p, '... -> h ...', h=heads) for p in model.parameters()]
            self.weights = nn.ParameterList([nn.Parameter(w) for w in weights])


    class Trainer:
        def __init__(self, model: nn.Module):
            self.model = model

        def stats(self):
            return [einops.reduce(p, '... -> ', 'mean') for p in self.model.parameters()]

        def batch(self, x):
            return rearrange(x, 'b n d -> n b d')


    class Owner(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.pos_emb = nn.Parameter(torch.zeros(16, d))

        def forward(self, x):
            return x + rearrange(self.pos_emb, 'n d -> 1 n d')


    def activations(x):
        return repeat(x, 'b d -> b h d', h=2)
""")


def _line(needle: str) -> int:
    return next(i for i, text in enumerate(SOURCE.splitlines(), 1) if needle in text)


def test_einops_of_a_built_models_parameters_reads_them() -> None:
    got = {(f.code, f.line) for f in check_source("m.py", SOURCE) if f.code.startswith("ZG1")}
    assert got == {("ZG109", _line("weights = [repeat(p")), ("ZG109", _line("einops.reduce(p"))}
