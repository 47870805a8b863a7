"""In `__init__`, the values of parameters walked from a child built before (`sum(p.data.sum() for p in
self.nets.parameters())`, `self.parameters()` once a child exists, a container of modules of no class we read,
`Sequential(*convnet.children())`) are read from placeholders: zero.Init partitioned the child when its own
`__init__` returned (ZG109, `value_reads._walks_built_child`). Look-alikes: flags and metadata of the walked
parameters (`requires_grad`, `.device`, `.dtype`, names, the list itself); the module's own parameters walked
before any child was built; the source of a copy whose write is reported (ZG103)."""

from __future__ import annotations

from tests.model.package_check import found_in_package

MODEL = """
    import numpy as np
    import torch
    from torch import nn
    from pretrained import load


    class Sum(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.nets = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d))
            self.weight_sum = np.sum([p.cpu().data.numpy().sum() for p in self.nets.parameters()])

        def forward(self, x):
            return self.nets(x)


    class Wrapped(nn.Module):
        def __init__(self, name):
            super().__init__()
            net = load(name)
            self.nets = nn.Sequential(*list(net.convnet.children()))
            self.initial = [p.clone() for p in self.nets.parameters()]

        def forward(self, x):
            return self.nets(x)


    class Flags(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.nets = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d))
            for p in self.nets.parameters():
                p.requires_grad = False
            self.dev = next(self.nets.parameters()).device
            self.names = [n for n, p in self.nets.named_parameters()]

        def forward(self, x):
            return self.nets(x)


    class Own(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.w = nn.Parameter(torch.randn(d))
            self.s = sum(p.data.sum() for p in self.parameters())
            self.lin = nn.Linear(d, d)

        def forward(self, x):
            return self.lin(x * self.w)
"""


def test_walked_parameters_of_a_built_child_read_in_init(tmp_path):
    assert found_in_package(tmp_path, {"model.py": MODEL}, "model.py", prefix="ZG1") == [("ZG109", 12), ("ZG109", 23)]
