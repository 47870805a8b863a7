"""ZG110: a forward run in `__init__` through a function handed the built child, or on a local container of layers.

`d = output_dim(self.features, (c, h, w))` with `def output_dim(net, shape): return net(torch.zeros(1, *shape))...`
in another file runs `self.features`, partitioned once built, with nothing gathering it yet. So does `probe =
nn.Sequential(*layers); out = probe(x)`, a container whose layers zgen cannot name. A function handed the child
that only initialises it, and a container of layers without parameters, stay clean.
"""

from __future__ import annotations

from package_check import found_in_package

UTIL = """
import torch
import torch.nn as nn


def output_dim(net, shape):
    with torch.no_grad():
        return net(torch.zeros(1, *shape)).flatten(1).shape[1]


def init_convs(net):
    for m in net.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight)
"""

NETS = """
import torch
import torch.nn as nn
from .util import output_dim, init_convs


class Probed(nn.Module):
    def __init__(self, c, h, w, n):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(c, 32, 3), nn.ReLU())
        d = output_dim(self.features, (c, h, w))
        self.fc = nn.Linear(d, n)

    def forward(self, x):
        return self.fc(self.features(x).flatten(1))


class Stacked(nn.Module):
    def __init__(self, c, n):
        super().__init__()
        layers = [nn.Conv2d(c, 16, 3), nn.ReLU()]
        probe = nn.Sequential(*layers)
        out = probe(torch.zeros(1, c, 32, 32))
        self.body = probe
        self.head = nn.Linear(out.numel(), n)

    def forward(self, x):
        return self.head(self.body(x).flatten(1))


class Plain(nn.Module):
    def __init__(self, c, n):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(c, 32, 3), nn.ReLU())
        init_convs(self.features)
        act = nn.Sequential(nn.ReLU(), nn.Flatten())
        scale = act(torch.ones(1, 1))
        self.fc = nn.Linear(32, n)

    def forward(self, x):
        return self.fc(self.features(x).mean((2, 3)))
"""


def test_a_function_handed_the_child_runs_it_and_so_does_a_local_container(tmp_path):
    found = found_in_package(tmp_path, {"util.py": UTIL, "nets.py": NETS}, "nets.py", prefix="ZG110")
    assert ("ZG110", 11) in found
    assert ("ZG110", 23) in found


def test_a_function_that_only_initialises_and_layers_without_parameters_are_clean(tmp_path):
    found = found_in_package(tmp_path, {"util.py": UTIL, "nets.py": NETS}, "nets.py", prefix="ZG110")
    assert [line for _code, line in found if line > 30] == []
