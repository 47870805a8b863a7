"""Sizes `__init__` bounds, and containers whose tensors no size keeps gathered.

A `ParameterList`/`ParameterDict` is a child module no one calls: no hook ever gathers its tensors, so reading one
in the holder's forward is unhooked (ZG301) whatever its size, `experts x rank x rank` with `experts=4, rank=32`
(4,096 elements) as much as a matrix of unknown size, and per-channel gains as much as a filter. A stem built from
`self.inplanes = 64` (`nn.Conv3d(3, self.inplanes, (1, 7, 7))`, 9,408 elements) is small; a conv built after a
helper of the class set `self.inplanes` again has no known size.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

MIX = """
import torch
from torch import nn


class CrossMix(nn.Module):
    def __init__(self, in_features, layers=2, rank=32, experts=4):
        super().__init__()
        self.U = nn.ParameterList([nn.Parameter(nn.init.xavier_normal_(torch.empty(experts, in_features, rank)))
                                   for _ in range(layers)])
        self.C = nn.ParameterList([nn.Parameter(nn.init.xavier_normal_(torch.empty(experts, rank, rank)))
                                   for _ in range(layers)])
        self.gate = nn.Linear(in_features, 1)

    def forward(self, x):
        for i in range(2):
            v = torch.matmul(self.C[i][0], x)
            x = torch.matmul(self.U[i][0], v) + self.gate(x)
        return x
"""

STEM = """
import torch.nn.functional as F
from torch import nn


class Omni(nn.Module):
    def __init__(self, planes=512):
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv3d(3, self.inplanes, kernel_size=(1, 7, 7), bias=False)
        self.layer1 = self._make_layer(planes)
        self.conv2 = nn.Conv3d(self.inplanes, self.inplanes, kernel_size=(1, 3, 3), bias=False)

    def _make_layer(self, planes):
        layer = nn.Conv3d(self.inplanes, planes, kernel_size=1)
        self.inplanes = planes * 4
        return layer

    def forward(self, x):
        x = F.conv2d(x, self.conv1.weight.squeeze(2))
        return self.layer1(F.conv2d(x, self.conv2.weight.squeeze(2)))

    def video(self, x):
        return self.conv2(self.layer1(self.conv1(x)))
"""


PATCHES = """
import torch
import torch.nn.functional as F
from torch import nn


class LevelPatchEmbed(nn.Module):
    def __init__(self, var_names, patch_size, embed_dim, history_size=2):
        super().__init__()
        self.kernel_size = (history_size, patch_size, patch_size)
        self.weights = nn.ParameterDict(
            {name: nn.Parameter(torch.empty(embed_dim, 1, *self.kernel_size)) for name in var_names}
        )
        self.gains = nn.ParameterDict({name: nn.Parameter(torch.ones(embed_dim)) for name in var_names})

    def forward(self, x, var_names):
        weight = torch.cat([self.weights[name] for name in var_names], dim=1)
        gain = torch.stack([self.gains[name] for name in var_names]).mean(0)
        return F.conv3d(x, weight, stride=self.kernel_size) * gain[None, :, None, None, None]
"""


def _found(source: str) -> list[tuple[str, int]]:
    found = check_source("model.py", textwrap.dedent(source))
    return sorted((f.code, f.line) for f in found if f.code.startswith("ZG3"))


def test_a_parameter_list_is_read_unhooked_whatever_the_size_of_its_tensors():
    assert _found(MIX) == [("ZG301", 17), ("ZG301", 18)]  # `self.C[i]` (4 x 32 x 32) as much as `self.U[i]`


def test_every_tensor_of_a_parameter_dict_is_read_unhooked():
    assert _found(PATCHES) == [("ZG301", 17), ("ZG301", 18)]  # the filters, and the per-channel gains too


def test_a_layer_sized_by_an_attribute_set_from_a_literal_is_small_until_a_helper_sets_it_again():
    assert _found(STEM) == [("ZG301", 21)]  # `self.conv2.weight`; not the 64 x 3 x 7 x 7 stem
