"""Code from a detector and a LoRA library the checker misread: a checkpoint loaded in `__init__` through a
`Sequential` put around children built before it, and a `ParameterList` built in both arms of an `if` and then
initialised item by item."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found_in_directory

DETECTOR = """
import torch
from torch import nn


class Down(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return self.conv(x)


class Detector(nn.Module):
    def __init__(self, backbone_weights=None):
        super().__init__()
        self.down1 = Down(8)
        self.down2 = Down(8)
        if backbone_weights:
            backbone = nn.Sequential(self.down1, self.down2)
            state = backbone.state_dict()
            state.update(torch.load(backbone_weights))
            backbone.load_state_dict(state)
        self.head = nn.Conv2d(8, 4, 1)

    def forward(self, x):
        return self.head(self.down2(self.down1(x)))
"""


def _line(source: str, text: str) -> int:
    return source.splitlines().index(text) + 1


def test_a_load_through_a_sequential_of_built_children_is_flagged(tmp_path: Path) -> None:
    load = _line(DETECTOR, "            backbone.load_state_dict(state)")
    assert ("ZG103", load) in found_in_directory(tmp_path, {"detector.py": DETECTOR}, "detector.py", "ZG1")


def test_a_load_into_a_sequential_of_new_layers_is_not(tmp_path: Path) -> None:
    # the container's layers are built with it, in this constructor: whole until the outermost `__init__` returns
    fresh = DETECTOR.replace("nn.Sequential(self.down1, self.down2)", "nn.Sequential(Down(8), Down(8))")
    assert found_in_directory(tmp_path, {"detector.py": fresh}, "detector.py", "ZG103") == []


ADAPTER = """
import math

import torch
from torch import nn


class DynamicLoRA(nn.Module):
    def __init__(self, org_module, dim=4):
        super().__init__()
        in_dim, out_dim = org_module.in_features, org_module.out_features
        if isinstance(org_module, nn.Conv2d):
            self.lora_A = nn.ParameterList([nn.Parameter(torch.zeros(1, in_dim, 3, 3)) for _ in range(dim)])
        else:
            self.lora_A = nn.ParameterList([nn.Parameter(torch.zeros(1, in_dim)) for _ in range(dim)])
        self.lora_B = nn.Parameter(torch.zeros(out_dim, dim))
        for lora in self.lora_A:
            nn.init.kaiming_uniform_(lora, a=math.sqrt(5))

    def forward(self, x):
        return x @ torch.cat(tuple(self.lora_A), 0).t() @ self.lora_B.t()
"""


def test_a_parameter_list_built_in_either_arm_then_initialised_is_flagged(tmp_path: Path) -> None:
    init = _line(ADAPTER, "            nn.init.kaiming_uniform_(lora, a=math.sqrt(5))")
    assert ("ZG103", init) in found_in_directory(tmp_path, {"adapter.py": ADAPTER}, "adapter.py", "ZG1")

