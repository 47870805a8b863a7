"""A non-forward method run on a model held by a plain class, where the call names the method by a keyword string
(`safe_call(self.actor, x, method="compare_kl")`) or the model is typed only as `nn.Module` (which defines no such
method: the package's module classes defining it answer the call, as for an untyped model)."""

from __future__ import annotations

from package_check import found_in_package

NETS = """
import torch
from torch import nn


class Actor(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.mu = nn.Linear(d, d)
        self.log_std = nn.Parameter(torch.zeros(d, 512))

    def forward(self, x):
        return self.mu(x)

    def compare_kl(self, x):
        return (self.log_std.exp().sum(-1) * x).sum()

    def describe(self, x):
        return x * 2
"""

UTIL = """
def safe_call(model, *args, method="__call__"):
    return getattr(model, method)(*args)
"""

ALGO = """
from torch import nn
from .util import safe_call


class TRPO:
    def __init__(self, actor: nn.Module):
        self.actor = actor

    def kl(self, x):
        return self.actor.compare_kl(x)

    def kl_by_name(self, x):
        def kl_func():
            return safe_call(self.actor, x, method="compare_kl")
        return kl_func()

    def act(self, x):
        return safe_call(self.actor, x)

    def describe(self, x):
        return safe_call(self.actor, x, method="describe") + self.actor.describe(x)

    def run(self, x):
        return self.actor(x)
"""


def test_keyword_named_method_and_generic_annotation(tmp_path):
    got = found_in_package(tmp_path, {"nets.py": NETS, "util.py": UTIL, "algo.py": ALGO}, "algo.py", prefix="ZG3")
    assert ("ZG303", 11) in got and ("ZG303", 15) in got


def test_calls_and_parameterless_methods_are_fine(tmp_path):
    got = found_in_package(tmp_path, {"nets.py": NETS, "util.py": UTIL, "algo.py": ALGO}, "algo.py", prefix="ZG3")
    assert [line for _code, line in got if line not in (11, 15)] == []
