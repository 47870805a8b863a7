"""A class whose base, read in another file of the package, derives from a library zgen cannot read.

`class BasePreprocessor(BaseModule)` of `mmengine.model` (not installed) builds no layer, so zgen cannot tell it is
a module; `class STN(BasePreprocessor)` builds `nn.Linear`s on `self` and defines `forward`: only a module keeps a
layer as a child, so it is one, and initialising its child after building it is ZG103. The same write inside
`GatheredParameters` is clean.
"""

from __future__ import annotations

from package_check import found_in_package

BASE = """
from mmengine.model import BaseModule


class BasePreprocessor(BaseModule):
    def forward(self, x, **kwargs):
        raise NotImplementedError
"""


def stn(init: str) -> str:
    return f"""
import deepspeed
import torch
from torch import nn

from .base import BasePreprocessor


class STN(BasePreprocessor):
    def __init__(self, n):
        super().__init__()
        self.fc1 = nn.Linear(512, 512)
        self.fc2 = nn.Linear(512, 2 * n)
{init}

    def forward(self, img):
        return self.fc2(self.fc1(img))
"""


def test_a_layer_built_by_a_class_of_an_unread_lineage_is_initialised_after_construction(tmp_path):
    init = "        self.fc2.weight.data.zero_()"
    found = found_in_package(tmp_path, {"base.py": BASE, "stn.py": stn(init)}, "stn.py", prefix="ZG1")
    assert found == [("ZG103", 14)]


def test_the_same_write_inside_gathered_parameters_is_clean(tmp_path):
    init = (
        "        with deepspeed.zero.GatheredParameters(self.fc2.weight, modifier_rank=0):\n"
        "            self.fc2.weight.data.zero_()"
    )
    assert found_in_package(tmp_path, {"base.py": BASE, "stn.py": stn(init)}, "stn.py", prefix="ZG1") == []
