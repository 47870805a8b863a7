"""ZG104 through a local bound to the re-parametrising function (h-init, realesrgan's `norm = spectral_norm` ...
`self.conv1 = norm(nn.Conv2d(...))`; `built._aliased`): calling the local calls the function it was bound to, or one
of a choice of them (`spectral_norm if sn else weight_norm`). Look-alikes: a plain layer beside them, and a local
bound to a lambda handing the layer back untouched."""

from __future__ import annotations

from package_check import found_in_package

MODEL = """\
import torch.nn as nn
from torch.nn.utils import spectral_norm, weight_norm


class Disc(nn.Module):
    def __init__(self, c):
        super().__init__()
        norm = spectral_norm
        self.conv0 = nn.Conv2d(c, 64, 3)  # 9 plain
        self.conv1 = norm(nn.Conv2d(64, 128, 4))  # 10 hazard

    def forward(self, x):
        return self.conv1(self.conv0(x))


class Choice(nn.Module):
    def __init__(self, c, use_sn=True):
        super().__init__()
        norm = spectral_norm if use_sn else weight_norm
        self.conv1 = norm(nn.Conv2d(c, 128, 4))  # 20 hazard

    def forward(self, x):
        return self.conv1(x)


class Ident(nn.Module):
    def __init__(self, c):
        super().__init__()
        norm = lambda m: m
        self.conv1 = norm(nn.Conv2d(c, 128, 4))  # 30 identity

    def forward(self, x):
        return self.conv1(x)
"""


def test_alias_of_reparametrising_function(tmp_path):
    got = found_in_package(tmp_path, {"model.py": MODEL}, "model.py", prefix="ZG1")
    assert ("ZG104", 10) in got
    assert ("ZG104", 20) in got


def test_plain_layer_and_identity_alias_stay_clean(tmp_path):
    got = found_in_package(tmp_path, {"model.py": MODEL}, "model.py", prefix="ZG1")
    assert not [line for _code, line in got if line in (9, 30)]
