"""A module that emulates another by running that class's method on itself (`nn.MultiheadAttention.forward(self,
q, k, v)`, `nn.Linear.forward(cast(nn.Linear, self), x)`) has that method read its attributes by name, so each
property of the class runs inside its forward (`ClassInfo.reachable`): a property returning a wrapped module's
parameter (`self.mha.in_proj_weight.data`) reads it there, with no hook of that module running (ZG301, not a
method of the built model's, ZG109). The parameters torch layers register (`in_proj_weight`, `q_proj_weight`) are
parameters of a wrapped child of unknown class (`known.torch_param_name`), and `cast(T, value)` is a value of
class `T` (also narrowing a member a base class set: `self.module = cast(nn.MultiheadAttention, self.module)`).
A property nothing in forward reads, one made of the module's own parameters, a class method handed something
other than `self`, and a cast child that is called are not ZG3."""

from __future__ import annotations

from package_check import found_in_package

HAZARDS = """
from typing import cast
from torch import nn


class Attn(nn.Module):
    def __init__(self, mha: nn.MultiheadAttention):
        super().__init__()
        self.mha = mha

    @property
    def in_proj_weight(self):
        weight = self.mha.in_proj_weight
        return weight.data.detach()

    @property
    def out_proj(self):
        return self.mha.out_proj

    def forward(self, q, k, v):
        return nn.MultiheadAttention.forward(cast(nn.MultiheadAttention, self), q, k, v)


class Lin(nn.Module):
    def __init__(self, base):
        super().__init__()
        self.base = base

    @property
    def weight(self):
        return self.base.weight * 2

    def forward(self, x):
        return nn.Linear.forward(self, x)


class Narrowed(nn.Module):
    def __init__(self, module):
        super().__init__()
        self.module = module
        self.module = cast(nn.MultiheadAttention, self.module)

    def forward(self, q):
        return q @ self.module.q_proj_weight.t()
"""

LOOK_ALIKES = """
from typing import cast
import torch
from torch import nn


class Plain(nn.Module):
    def __init__(self, base: nn.Linear):
        super().__init__()
        self.base = base

    @property
    def doubled(self):
        return self.base.weight.sum() * 2

    def forward(self, x):
        return self.base(x)


class Own(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.w = nn.Parameter(torch.randn(d, d))
        self.b = nn.Parameter(torch.zeros(d))

    @property
    def weight(self):
        return self.w * 2

    @property
    def bias(self):
        return self.b

    def forward(self, x):
        return nn.Linear.forward(self, x)


class Static(nn.Module):
    def __init__(self, base: nn.Linear):
        super().__init__()
        self.base = base

    @property
    def doubled(self):
        return self.base.weight.sum() * 2

    def forward(self, x):
        return Helper.scale(x, 2) + self.base(x)


class Helper:
    @staticmethod
    def scale(x, s):
        return x * s


class Called(nn.Module):
    def __init__(self, module):
        super().__init__()
        self.module = cast(nn.MultiheadAttention, module)

    def forward(self, q):
        if self.module.in_proj_weight is None:
            return q
        dtype = self.module.in_proj_weight.dtype
        bias = self.module.bias_k
        return self.module(q, q, q)[0].to(dtype) + (0 if bias is None else bias)
"""


def test_properties_read_by_an_emulated_forward_are_read_in_forward(tmp_path):
    found = found_in_package(tmp_path, {"model.py": HAZARDS}, "model.py", prefix="ZG3")
    assert ("ZG301", 13) in found  # the in-projection, bound to a local read through `.data`
    assert ("ZG301", 31) in found  # `nn.Linear.forward(self, x)` reads `self.weight`
    assert ("ZG301", 44) in found  # the member narrowed to a MultiheadAttention


def test_unread_own_static_and_called_stay_clean_of_zg3(tmp_path):
    # only the two `doubled` properties, which no forward reads, compute with a child's weight outside any forward
    # (ZG303 at the read); the emulated, static and narrowed forwards add nothing
    found = found_in_package(tmp_path, {"model.py": LOOK_ALIKES}, "model.py", prefix="ZG3")
    assert found == [("ZG303", 14), ("ZG303", 45)]
