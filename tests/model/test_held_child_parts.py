"""A wrapper that runs a held ViT's parts one by one (its own forward never runs) and reads the ViT's direct
parameters (ZG301): the ViT's class is read from another package through the argument's annotation
(`vit: VisionTransformer`), and the read sits in an override that a template method of a base class in another
file of the package calls (`preprocess` -> `add_pos_embed`)."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

VIT = """
import torch
from torch import nn


class VisionTransformer(nn.Module):
    def __init__(self, dim=768, n=196, reg_tokens=4):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, dim, 16, 16)
        self.pos_embed = nn.Parameter(torch.randn(1, n + 1, dim) * 0.02)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.blocks = nn.ModuleList([nn.Linear(dim, dim) for _ in range(12)])

    def forward(self, x):
        x = self.patch_embed(x).flatten(2).transpose(1, 2) + self.pos_embed[:, 1:]
        for block in self.blocks:
            x = block(x)
        return x
"""

BASE = """
from torch import nn


class MaskedBase(nn.Module):
    def preprocess(self, images):
        tokens = self.images_to_tokens(images)
        return self.add_pos_embed(tokens)

    def encode(self, images):
        return self.blocks_of(self.preprocess(images))
"""

WRAPPER = """
import torch
from vitlib.vit import VisionTransformer

from .base import MaskedBase


class MaskedViT(MaskedBase):
    def __init__(self, vit: VisionTransformer):
        super().__init__()
        self.vit = vit

    def images_to_tokens(self, images):
        return self.vit.patch_embed(images).flatten(2).transpose(1, 2)

    def add_pos_embed(self, x):
        cls = self.vit.cls_token.expand(x.shape[0], -1, -1)
        return torch.cat([cls, x], dim=1) + self.vit.{read}

    def blocks_of(self, x):
        for block in self.vit.blocks:
            x = block(x)
        return x

    def forward(self, images):
        return self.encode(images)
"""


def _check(tmp_path, read: str) -> list[tuple[str, int]]:
    lib = tmp_path / "work" / "vitlib"  # another top-level package beside the checked one
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text("")
    (lib / "vit.py").write_text(textwrap.dedent(VIT))
    pkg = tmp_path / "work" / "selfsup"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "base.py").write_text(textwrap.dedent(BASE))
    wrapper = pkg / "masked.py"
    wrapper.write_text(textwrap.dedent(WRAPPER.format(read=read)))
    return [(f.code, f.line) for f in check_source(str(wrapper), wrapper.read_text())]


def test_the_held_vits_position_table_read_around_its_forward_is_flagged(tmp_path):
    assert _check(tmp_path, "pos_embed") == [("ZG301", 18)]


def test_the_class_token_alone_stays_gathered(tmp_path):
    assert _check(tmp_path, "cls_token") == []
