"""A free function run only by constructors on `self` initialises the constructing module's own parameters safely.

pycls's `init_weights_vit(model)` is called once, as `init_weights_vit(self)` at the end of `ViT.__init__`. Its walk
of `model.named_modules()` writes the children's weights, partitioned once each child was built (ZG103, reported at
the call and in the walk); its `init.normal_(model.pos_embedding)` writes ViT's own parameter, whole until ViT's
constructor returns. Called from anywhere else (a training script), the function is handed a built model and that
write is lost too.
"""

from __future__ import annotations

from zgen.model import check_source

VIT = """
import torch
from torch import nn
from torch.nn import init


class ViT(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.pos_embedding = nn.Parameter(torch.zeros(196, 1, d))
        self.head = nn.Linear(d, 1000)
        init_weights_vit(self)

    def forward(self, x):
        return self.head(x + self.pos_embedding)


def init_weights_vit(model):
    for k, m in model.named_modules():
        if isinstance(m, nn.Linear):
            init.zeros_(m.weight)
    init.normal_(model.pos_embedding, mean=0.0, std=0.02)
"""


def _found(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("vit.py", source) if f.code.startswith("ZG1")]


def test_own_parameter_of_the_constructing_module_is_whole():
    assert _found(VIT) == [("ZG103", 12), ("ZG103", 21)]


def test_the_same_write_on_a_model_a_script_hands_over_is_lost():
    script = VIT + """

def main():
    model = ViT(768)
    init_weights_vit(model)
"""
    assert ("ZG103", 22) in _found(script)
