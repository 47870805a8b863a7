"""Writes to the layers of a built model in shapes detection and vocoder code uses.

* A head's bias initialiser run on the built model, writing through a local bound to a view of each conv's bias, in
  two loops (`b = conv.bias.view(1, -1)`; `b.data.fill_(v)`): each loop's writes are the bias's.
* A vocoder's `remove_weight_norm` handing each built conv to torch's `remove_weight_norm`, which folds the weight's
  parts back into a new weight outside any forward.
* A model whose layers a builder function makes into `nn.Sequential()` blocks filled by `add_module`, loaded by the
  function that built it.
"""

from __future__ import annotations

from zgen.model import check_source

HEAD = """
import math
from torch import nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.cls_preds = nn.ModuleList([nn.Conv2d(256, 80, 1) for _ in range(3)])
        self.obj_preds = nn.ModuleList([nn.Conv2d(256, 1, 1) for _ in range(3)])

    def forward(self, xs):
        return [c(x) + o(x) for c, o, x in zip(self.cls_preds, self.obj_preds, xs)]

    def initialize_biases(self, prior_prob):
        for conv in self.cls_preds:
            b = conv.bias.view(1, -1)
            b.data.fill_(-math.log((1 - prior_prob) / prior_prob))
        for conv in self.obj_preds:
            b = conv.bias.view(1, -1)
            b.data.fill_(-math.log((1 - prior_prob) / prior_prob))
"""

VOCODER = """
from torch import nn
from torch.nn.utils import remove_weight_norm, weight_norm


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.ups = nn.ModuleList([weight_norm(nn.ConvTranspose1d(512, 512, 16)) for _ in range(4)])
        self.conv_post = weight_norm(nn.Conv1d(512, 1, 7))

    def forward(self, x):
        for up in self.ups:
            x = up(x)
        return self.conv_post(x)

    def remove_weight_norm(self):
        for up in self.ups:
            remove_weight_norm(up)
        remove_weight_norm(self.conv_post)
"""

CHOSEN_BLOCKS = """
from torch import nn
from torch.nn.utils import remove_weight_norm


class ResBlock1(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv1d(c, c, 3)

    def forward(self, x):
        return self.conv(x)


class ResBlock2(ResBlock1):
    pass


class Generator(nn.Module):
    def __init__(self, c, kind):
        super().__init__()
        self.ups = nn.ModuleList([nn.ConvTranspose1d(c, c, 16) for _ in range(4)])
        resblock = ResBlock1 if kind == "1" else ResBlock2
        self.resblocks = nn.ModuleList([resblock(c) for _ in range(4)])

    def forward(self, x):
        for up, block in zip(self.ups, self.resblocks):
            x = block(up(x))
        return x

    def remove_weight_norm(self):
        for l in self.ups:
            remove_weight_norm(l)
        for l in self.resblocks:
            remove_weight_norm(l.conv)
"""

DARKNET = """
import torch
from torch import nn


def create_modules(defs):
    hyper = defs.pop(0)
    module_list = nn.ModuleList()
    for i, d in enumerate(defs):
        modules = nn.Sequential()
        if d["type"] == "convolutional":
            modules.add_module(f"conv_{i}", nn.Conv2d(d["in"], d["out"], 3))
        module_list.append(modules)
    return hyper, module_list


class Darknet(nn.Module):
    def __init__(self, defs):
        super().__init__()
        self.hyper, self.module_list = create_modules(defs)

    def forward(self, x):
        for m in self.module_list:
            x = m(x)
        return x


def load_model(defs, weights_path):
    model = Darknet(defs)
    model.load_state_dict(torch.load(weights_path))
    return model
"""


def _found(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("model.py", source) if f.code.startswith("ZG1")]


def test_bias_writes_through_a_view_bound_in_each_loop():
    assert [f for f in _found(HEAD) if f[0] == "ZG103"] == [("ZG103", 18), ("ZG103", 21)]


def test_removing_weight_norm_from_built_layers():
    # (the `weight_norm` of built layers in the constructor is ZG104's)
    assert [f for f in _found(VOCODER) if f[0] != "ZG104"] == [("ZG101", 19), ("ZG101", 20)]


def test_blocks_of_a_class_chosen_by_a_setting():
    # (`resblock = ResBlock1 if kind == "1" else ResBlock2`: the blocks are of either class, modules both)
    assert _found(CHOSEN_BLOCKS) == [("ZG101", 33), ("ZG101", 35)]


def test_blocks_filled_by_add_module_make_a_model_with_parameters():
    assert _found(DARKNET) == [("ZG108", 30)]
