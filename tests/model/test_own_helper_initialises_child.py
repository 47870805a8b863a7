"""ZG103 at the call where `__init__` (or a helper it calls) hands a built child to a method of the class that
initialises or writes it (h-init: make_a_video's `self.init_conv_(self.up_space[0], 4)`, neuraloperator's
`self.init_weight(self.to_k, init_fn)`), as for a function of the file (`init_layer(self.conv)`): each call names the
child it hands, partitioned once built (`params._module_handed_to_writer` with `inherited_argument_effects(in_file=
True)`). Look-alike: a helper handed a child that reads only its settings (`m.out_features`)."""

from __future__ import annotations

from package_check import found_in_package

MODEL = """\
import torch
import torch.nn as nn


class Up(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.up = nn.Sequential(nn.Conv2d(d, d * 4, 1), nn.SiLU())
        self.down = nn.Conv2d(d * 4, d, 1)
        self.init_()

    def init_(self):
        self.init_conv_(self.up[0], 4)  # 13 hazard
        self.init_conv_(self.down, 1)  # 14 hazard

    def init_conv_(self, conv, factor):
        w = torch.empty(conv.out_channels, conv.in_channels, 1, 1)
        nn.init.kaiming_uniform_(w)
        conv.weight.data.copy_(w)

    def forward(self, x):
        return self.down(self.up(x))


class Reader(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.describe(self.fc)  # 30 settings only

    def describe(self, m):
        self.n_out = m.out_features

    def forward(self, x):
        return self.fc(x)
"""


def test_child_handed_to_own_initialiser_reported_at_each_call(tmp_path):
    got = found_in_package(tmp_path, {"model.py": MODEL}, "model.py", prefix="ZG1")
    assert ("ZG103", 13) in got
    assert ("ZG103", 14) in got


def test_helper_reading_settings_stays_clean(tmp_path):
    got = found_in_package(tmp_path, {"model.py": MODEL}, "model.py", prefix="ZG1")
    assert not [line for _code, line in got if line == 30]
