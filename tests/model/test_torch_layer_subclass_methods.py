"""A method of a torch layer's subclass that runs the layer's own forward by name (`def embed(self, idxs): return
super().forward(idxs)` of an `nn.Embedding`) computes with the layer's weight: called on a child from another
module's forward it runs outside the child's hooks (ZG303). The layer called as a module is gathered."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found

CODEBOOK = '''
import torch
from torch import nn


class VQEmbedding(nn.Embedding):
    def __init__(self, n_embed, embed_dim):
        super().__init__(n_embed + 1, embed_dim, padding_idx=n_embed)

    def embed(self, idxs):
        return super().forward(idxs)


class RQBottleneck(nn.Module):
    def __init__(self, n, d, depth):
        super().__init__()
        self.codebooks = nn.ModuleList([VQEmbedding(n, d) for _ in range(depth)])

    def forward(self, code):
        slices = torch.chunk(code, chunks=code.shape[-1], dim=-1)
        embeds = [{call} for i, s in enumerate(slices)]
        return torch.cat(embeds, dim=-2).sum(-2)
'''


def test_a_layer_subclass_method_running_the_layers_forward_by_name(tmp_path: Path) -> None:
    path = tmp_path / "quantize.py"
    path.write_text(CODEBOOK.format(call="self.codebooks[i].embed(s)"))
    assert found(path, "ZG3") == [("ZG303", 21)]
    path.write_text(CODEBOOK.format(call="self.codebooks[i](s)"))
    assert found(path, "ZG3") == []
