"""Moments of a module's life outside its gathered forward: a child loaded after it was built, a parameter made in
a forward hook, the model printed or a loss helper run on it by the training loop."""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

HEAD = """
import copy

import deepspeed
import torch
from torch import nn
"""


def codes(source: str) -> list[str]:
    """The ZG1 codes zgen reports for a file made of `HEAD` and `source`."""
    return sorted(f.code for f in check_source("m.py", HEAD + textwrap.dedent(source)) if f.code.startswith("ZG1"))


LOADER = """
class Loader(nn.Module):
    def __init__(self, path):
        super().__init__()
        self.backbone = nn.Linear(1024, 4096)
{load}

    def forward(self, x):
        return self.backbone(x)
"""

HOOKED = """
class Lazy(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = None
        self.register_forward_pre_hook(self._materialise)

    def _materialise(self, module, args):
{hook}

    def forward(self, x):
        return x @ self.weight.t()
"""

LAZY = """
def uniform_init(weight, fan_in):
    bound = 1.0 / fan_in ** 0.5
    with torch.no_grad():
        weight.uniform_(-bound, bound)


class LazyLinear(nn.Module):
    def __init__(self, out_features):
        super().__init__()
        self.out_features = out_features
        self.weight = nn.parameter.UninitializedParameter()
        self._hook = self.register_forward_pre_hook(self._first_call)

    def _first_call(self, module, args):
{hook}

    def reset_parameters(self):
        uniform_init(self.weight, self.in_features)

    def forward(self, x):
        return x @ self.weight.t()
"""

PRINTED = """
class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(1024, 4096)

    def {name}(self):
        return {body}

    def forward(self, x):
        return self.fc(x)
"""

HAZARDS = {
    "child-loaded-after-it-was-built": ("ZG103", LOADER.format(load="""
        self.backbone.load_state_dict(torch.load(path))""")),
    "parameter-materialised-in-a-forward-pre-hook": ("ZG106", HOOKED.format(hook="""
        if self.weight is None:
            self.weight = nn.Parameter(torch.empty(4096, args[0].shape[-1]))""")),
    "uninitialised-parameter-materialised-in-a-forward-pre-hook": ("ZG101", LAZY.format(hook="""
        self.in_features = args[0].shape[-1]
        self.weight.materialize((self.out_features, self.in_features))
        uniform_init(self.weight, self.in_features)
        self._hook.remove()""")),
    "local-layer-initialised-before-the-name-wraps-it": ("ZG103", """
class Wrapped(nn.Module):
    def __init__(self, inner, d=1024):
        super().__init__()
        self.inner = inner
        self.res = nn.Linear(d, d)

    def forward(self, x):
        return self.res(x) + self.inner(x)


class Stack(nn.Module):
    def __init__(self, n=2):
        super().__init__()
        self.layers = nn.ModuleList()
        for _ in range(n):
            layer = nn.Linear(1024, 1024)
            nn.init.xavier_normal_(layer.weight)
            layer = Wrapped(layer)
            self.layers.append(layer)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
"""),
    "repr-reads-a-child-weight": ("ZG109", PRINTED.format(name="__repr__", body='f"Head({self.fc.weight.abs().mean()})"')),
    "repr-prints-a-child-weight-size": ("ZG102", PRINTED.format(name="extra_repr", body='f"{self.fc.weight.shape}"')),
    "loss-helper-reads-a-child-weight": ("ZG109", PRINTED.format(name="l2_penalty", body="(self.fc.weight ** 2).sum()")),
}


@pytest.mark.parametrize("case", sorted(HAZARDS))
def test_hazard_is_found(case):
    code, source = HAZARDS[case]
    assert code in codes(source), case


LOOK_ALIKES = {
    "child-loaded-inside-a-gather": LOADER.format(load="""
        with deepspeed.zero.GatheredParameters(list(self.backbone.parameters()), modifier_rank=0):
            self.backbone.load_state_dict(torch.load(path))"""),
    "forward-pre-hook-that-only-checks-the-input": HOOKED.format(hook="""
        assert args[0].shape[-1] == 1024"""),
    "lazy-layer-pre-hook-that-only-records-the-input-width": LAZY.format(hook="""
        self.in_features = args[0].shape[-1]"""),
    "repr-prints-the-layer-attributes": PRINTED.format(name="extra_repr", body='f"{self.fc.in_features}"'),
    "loss-helper-reads-the-dtype-only": PRINTED.format(name="l2_penalty", body="self.fc.weight.dtype"),
    "helper-writes-a-copy-it-made": """
def normalised(t):
    t = copy.deepcopy(t) if t.dim() > 1 else Scaled(t, 1.0)
    t.div_(2.0)
    return t


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(1024, 4096)

    def forward(self, x):
        return x @ normalised(self.fc.weight)
""",
}


@pytest.mark.parametrize("case", sorted(LOOK_ALIKES))
def test_look_alike_is_clean(case):
    assert codes(LOOK_ALIKES[case]) == [], case


def test_an_initialiser_given_the_parameter_is_quoted_as_a_call():
    source = LAZY.format(hook="""
        self.weight.materialize((self.out_features, args[0].shape[-1]))
        nn.init.zeros_(self.weight)""")
    messages = [f.message for f in check_source("m.py", HEAD + textwrap.dedent(source)) if f.code == "ZG101"]
    assert any(m.startswith("`torch.nn.init.zeros_(self.weight)` writes") for m in messages), messages
