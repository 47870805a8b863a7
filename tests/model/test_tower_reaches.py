"""What a tower skipped on an optional input runs, reached in ways a module's members do not spell out.

* A class chosen by configuration, `(FrozenCLIP if frozen else CLIP)(device)`: either class; the module one gathers.
* A model a package's loader hands back unpacked, `self.clip_model, self.preprocess = clip.load(name)`: a model of no
  class we read, whose parts run two attributes in (`self.clip_model.visual.conv1(x)`, or `vt.conv1(x)` for `vt =
  self.clip_model.visual`). Its settings (`self.clip_model.config.get(k)`) run nothing.
* A container of blocks unpacked into locals, `resnet, resnet2 = self.local_cond_encoder`: each a block it holds.
"""

from __future__ import annotations

from zgen.model import check_source

ENCODERS = """
import clip
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(512, 512)

    def embed(self, x):
        return self.proj(x)


class FrozenEncoder:
    def __init__(self):
        self.model = Encoder()

    def embed(self, x):
        return self.model.embed(x)


class ClipTower(nn.Module):
    def __init__(self, name):
        super().__init__()
        self.clip_model, self.preprocess = clip.load(name)

    def embed_grid(self, x):
        vt = self.clip_model.visual
        return vt.transformer(vt.conv1(x))

    def embed_deep(self, x):
        return self.clip_model.visual.conv1(x)

    def width(self, x):
        return self.clip_model.config.get("width")
"""

CHOSEN = ENCODERS + """

class Net(nn.Module):
    def __init__(self, frozen=False):
        super().__init__()
        self.enc = (FrozenEncoder if frozen else Encoder)()
        self.tower = ClipTower("ViT-L/14")
        self.out = nn.Linear(512, 512)

    def forward(self, x, images=None, grids=None, deep=None, widths=None):
        if images is not None:
            x = x + self.enc.embed(images)
        if grids is not None:
            x = x + self.tower.embed_grid(grids)
        if deep is not None:
            x = x + self.tower.embed_deep(deep)
        if widths is not None:
            x = x * self.tower.width(widths)
        return self.out(x)
"""

UNPACKED = """
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.conv = nn.Conv1d(d, d, 3, padding=1)

    def forward(self, x):
        return self.conv(x)


class Unet(nn.Module):
    def __init__(self, d, local_dim=None):
        super().__init__()
        encoder = None
        if local_dim is not None:
            encoder = nn.ModuleList([Block(d), Block(d)])
        self.local_cond_encoder = encoder
        self.mid = Block(d)

    def forward(self, x, local_cond=None):
        h = []
        if local_cond is not None:
            resnet, resnet2 = self.local_cond_encoder
            h.append(resnet(local_cond))
            h.append(resnet2(local_cond))
        return self.mid(x)
"""


def _found(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("model.py", source) if f.code.startswith("ZG2")]


def test_towers_reached_through_a_class_choice_and_a_loaded_model():
    # the class chosen by a setting, the loaded model's parts two attributes in (through a local or not); not its
    # settings
    assert _found(CHOSEN) == [("ZG205", 48), ("ZG205", 50), ("ZG205", 52)]


def test_blocks_unpacked_from_a_container():
    assert _found(UNPACKED) == [("ZG205", 26)]


PAIRED = """
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.proj = nn.Linear(d, d)
        self.head = nn.Linear(d, d)

    def forward(self, x):
        norm, proj = self.norm, self.proj
        h = proj(x) * norm.weight
        return self.head(h)
"""


def test_names_unpacked_pairwise_take_each_their_own_module():
    # `norm, proj = self.norm, self.proj`: `norm` is the LayerNorm alone, whose small weight stays gathered
    assert [(f.code, f.line) for f in check_source("block.py", PAIRED) if f.code.startswith("ZG3")] == []
