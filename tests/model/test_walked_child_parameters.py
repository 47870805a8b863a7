"""A walk of a built child's parameters through a name bound to the child (h-init): a loop variable over a
ModuleList (`for layer in self.layers: for p in layer.parameters()`), a local alias (`fc = self.fc`), and an argument
of an own helper the class's calls bind to a child, whatever its name (`def init_weight(self, weight, init_fn): for
param in weight.parameters()`, neuraloperator's attention layer; `params._walked_arguments`). In `__init__` each
child is partitioned once built: ZG103. Look-alikes: the same walk over a module the method builds itself outside
`__init__`, and a walk setting only `requires_grad`."""

from __future__ import annotations

from package_check import found_in_package

MODEL = """\
import torch.nn as nn


class Loop(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(d, d) for _ in range(3)])
        for layer in self.layers:
            for p in layer.parameters():
                nn.init.zeros_(p)  # 10 hazard

    def forward(self, x):
        for l in self.layers:
            x = l(x)
        return x


class Alias(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)
        fc = self.fc
        for p in fc.parameters():
            p.data.zero_()  # 24 hazard
        for p in fc.parameters():
            p.requires_grad = False  # 26 flag only

    def forward(self, x):
        return self.fc(x)


class Attn(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.to_k = nn.Linear(d, d)
        self.init_qkv()

    def init_weight(self, weight, init_fn):
        for param in weight.parameters():
            init_fn(param)  # 40 hazard

    def init_qkv(self):
        self.init_weight(self.to_k, nn.init.xavier_uniform_)

    def forward(self, x):
        return self.to_k(x)


class Fresh(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.d = d

    def extend(self):
        extra = nn.Linear(self.d, self.d)
        for p in extra.parameters():
            nn.init.zeros_(p)  # 57 built here, outside zero.Init
        self.extra = extra

    def forward(self, x):
        return x
"""


def test_walks_of_a_child_bound_to_a_name(tmp_path):
    got = found_in_package(tmp_path, {"model.py": MODEL}, "model.py", prefix="ZG1")
    for line in (10, 24, 40):
        assert ("ZG103", line) in got


def test_flags_and_fresh_modules_stay_clean(tmp_path):
    got = found_in_package(tmp_path, {"model.py": MODEL}, "model.py", prefix="ZG1")
    assert not [line for _code, line in got if line in (26, 57)]
