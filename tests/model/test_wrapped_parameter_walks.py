"""A module the constructor was handed and keeps (`self.module = module`, class unknown) is a child: walking its
parameters (`self.module.parameters()`, `named_parameters()`) in the holder's forward reads a submodule's
parameters outside that submodule's hooks (ZG301), although the holder builds no child of its own. Reading only
their device, dtype or `requires_grad`, a walk in `__init__` (also of an item of a `ModuleDict`: `self.heads[k].parameters()`), and a walk inside `GatheredParameters` are not."""

from __future__ import annotations

from package_check import found_in_package

HAZARDS = """
from torch import nn


class Penalised(nn.Module):
    def __init__(self, net, coef=0.1):
        super().__init__()
        self.net = net
        self.coef = coef

    def forward(self, x):
        penalty = 0.0
        for name, w in self.net.named_parameters():
            penalty = penalty + w.pow(2).sum()
        return self.net(x), self.coef * penalty


class Scaled(nn.Module):
    def __init__(self, module):
        super().__init__()
        self.module = module

    def forward(self, x):
        s = sum(p.sum() for p in self.module.parameters())
        return self.module(x) * s
"""

LOOK_ALIKES = """
from typing import Dict, Mapping, Optional

import deepspeed
from torch import nn


class Moved(nn.Module):
    def __init__(self, module):
        super().__init__()
        self.module = module
        for p in self.module.parameters():
            p.requires_grad = False

    def forward(self, x):
        dev = [p.device for p in self.module.parameters()][0]
        n = sum(1 for p in self.module.parameters() if p.requires_grad)
        return self.module(x.to(dev)) * n


class Heads(nn.Module):
    def __init__(self, heads: Mapping[str, nn.Module], model, heads_require_grad: Optional[Dict[str, bool]] = None):
        super().__init__()
        if isinstance(heads, Mapping):
            heads = {k: v for k, v in heads.items() if v is not None}
        self.heads = nn.ModuleDict(heads)
        self.model = model
        for param in self.model.parameters():
            param.requires_grad = False
        if heads_require_grad is not None:
            for head_name, requires_grad in heads_require_grad.items():
                for param in self.heads[head_name].parameters():
                    param.requires_grad = requires_grad


class Gathered(nn.Module):
    def __init__(self, module):
        super().__init__()
        self.module = module

    def forward(self, x):
        with deepspeed.zero.GatheredParameters(list(self.module.parameters())):
            s = sum(p.sum() for p in self.module.parameters())
        return self.module(x) * s
"""


def test_walk_of_a_wrapped_module_in_forward_is_read(tmp_path):
    assert found_in_package(tmp_path, {"model.py": HAZARDS}, "model.py") == [("ZG301", 14), ("ZG301", 24)]


def test_device_requires_grad_init_and_gathered_walks_stay_clean(tmp_path):
    assert found_in_package(tmp_path, {"model.py": LOOK_ALIKES}, "model.py") == []
