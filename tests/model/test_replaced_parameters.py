"""ZG103 for a built child's parameter replaced by a new one (h-init): `self.linear.weight = nn.Parameter(w)` in
`__init__` after `self.linear` was built, in a layer factory nested in the constructor, through a local alias of
the child, and in a layer factory of another file (ZG101 there). Under `deepspeed.zero.Init` the child was
partitioned when its own `__init__` returned: a value made from the old parameter copies its empty placeholder,
and any new tensor stays whole on every rank until `deepspeed.initialize` converts it (rank 0's values).
Beside them the look-alikes: a tie to another module's parameter (`head.weight = embed.weight`), the module's own
parameter assigned twice, a factory building a bare parameter (`effects._new_parameter`)."""

from __future__ import annotations

from package_check import found_in_package

MODEL = """\
import torch
import torch.nn as nn
from .helpers import make_layer


class Dense(nn.Module):
    def __init__(self, i, o, init_weight=None):
        super().__init__()
        self.linear = nn.Linear(i, o)
        if init_weight is not None:
            self.linear.weight = nn.Parameter(init_weight)  # 11 hazard

    def forward(self, x):
        return self.linear(x)


class Local(nn.Module):
    def __init__(self, i, o):
        super().__init__()

        def _make(a, b):
            layer = nn.Linear(a, b)
            layer.weight = torch.nn.Parameter(torch.ones(b, a) / a)  # 23 hazard
            return layer

        self.fc = _make(i, o)

    def forward(self, x):
        return self.fc(x)


class Alias(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.proj = nn.Linear(i, o)
        lin = self.proj
        lin.bias = nn.Parameter(torch.zeros(o))  # 37 hazard

    def forward(self, x):
        return self.proj(x)


class Tied(nn.Module):
    def __init__(self, v, d):
        super().__init__()
        self.embed = nn.Embedding(v, d)
        self.head = nn.Linear(d, v, bias=False)
        self.head.weight = self.embed.weight  # 48 tie: both partitioned

    def forward(self, x):
        return self.head(self.embed(x))


class Own(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(d, d))  # 57 own
        self.weight = nn.Parameter(torch.zeros(d, d))  # 58 own again

    def forward(self, x):
        return x @ self.weight


class Other(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = make_layer(d)

    def forward(self, x):
        return self.fc(x)
"""

HELPERS = """\
import torch
import torch.nn as nn


def make_layer(d):
    layer = nn.Linear(d, d)
    layer.weight = nn.Parameter(torch.eye(d))  # 7 hazard
    return layer


def plain_parameter(d):
    w = nn.Parameter(torch.eye(d))  # 12 no module
    return w
"""

FILES = {"model.py": MODEL, "helpers.py": HELPERS}


def test_child_parameter_replaced_in_init(tmp_path):
    got = found_in_package(tmp_path, FILES, "model.py", prefix="ZG1")
    assert ("ZG103", 11) in got
    assert ("ZG103", 23) in got
    assert ("ZG103", 37) in got


def test_tie_and_own_parameters_stay_clean(tmp_path):
    got = found_in_package(tmp_path, FILES, "model.py", prefix="ZG1")
    assert not [line for _code, line in got if line in (48, 57, 58)]


def test_layer_factory_of_another_file(tmp_path):
    got = found_in_package(tmp_path, FILES, "helpers.py", prefix="ZG1")
    assert ("ZG101", 7) in got
    assert not [line for _code, line in got if line == 12]


# Look-alikes adding parameters without replacing a partitioned one: the module's own made by its method
# (`self.tokens = nn.Parameter(...)`), a `ParameterDict` filled by key (`effects._of_a_module`).
FILLED = """\
import torch
import torch.nn as nn


class Stem(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def init_tokens(self):
        self.tokens = nn.Parameter(torch.randn(1, 16, 8))  # 11 the module's own, made here

    def forward(self, x):
        return self.proj(x)


class Model(nn.Module):
    def __init__(self, d, keys):
        super().__init__()
        self.stem = Stem(d)
        self.stem.init_tokens()  # 21 adds a parameter, replaces none
        self.nulls = nn.ParameterDict()
        for k in keys:
            self.nulls[k] = nn.Parameter(torch.zeros(d))  # 24 filled by key

    def forward(self, x):
        return self.stem(x)
"""


def test_own_new_parameters_and_filled_dicts_stay_clean(tmp_path):
    got = found_in_package(tmp_path, {"model.py": FILLED}, "model.py", prefix="ZG1")
    assert not [line for _code, line in got if line in (11, 21, 24)]
