"""ZG302 on a child's `.forward(...)`: only a child whose class registers parameters of its own loses anything when
its hooks are skipped (its children still run theirs). What class the child has is read where the file says it:
an element a `ModuleDict`/`ModuleList` stores under a key in `__init__` (`self.nets["rnn"] = RNN(d)`, `self.nets[k] =
factory(d)`: the class the construction or the factory makes, by the constant key when there is one), and a module
the file's every construction of the holder passes (`SubModule(self, i)` in a method of `Blocks`). Each hazard
beside a safe look-alike (blind14's robomimic, blind16's neuraloperator)."""

from __future__ import annotations

from zgen.model import check_source

SOURCE = """import torch
from torch import nn


class Enc(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        return self.fc(x)


class Own(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.w = nn.Parameter(torch.randn(d, d))

    def forward(self, x):
        return x @ self.w


def enc_factory(d):
    return Enc(d)


class Keyed(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.nets = nn.ModuleDict()
        self.nets["enc"] = Enc(d)
        self.nets["own"] = Own(d)

    def forward(self, x):
        return self.nets["enc"].forward(x)  # safe


class Looped(nn.Module):
    def __init__(self, groups, d):
        super().__init__()
        self.nets = nn.ModuleDict()
        for g in groups:
            self.nets[g] = enc_factory(d)

    def forward(self, inputs):
        return [self.nets[g].forward(inputs[g]) for g in inputs]  # safe


class Passed(nn.Module):
    def __init__(self, main: Enc):
        super().__init__()
        self.main_module = main

    def forward(self, x):
        return self.main_module.forward(x)


class KeyedOwn(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.nets = nn.ModuleDict()
        self.nets["enc"] = Enc(d)
        self.nets["own"] = Own(d)

    def forward(self, x):
        return self.nets["own"].forward(x)  # hazard


class LoopedOwn(nn.Module):
    def __init__(self, groups, d):
        super().__init__()
        self.nets = nn.ModuleDict()
        for g in groups:
            self.nets[g] = Own(d)

    def forward(self, inputs):
        return [self.nets[g].forward(inputs[g]) for g in inputs]  # hazard


class Unknown(nn.Module):
    def __init__(self, groups, make):
        super().__init__()
        self.nets = nn.ModuleDict()
        for g in groups:
            self.nets[g] = make(g)

    def forward(self, inputs):
        return [self.nets[g].forward(inputs[g]) for g in inputs]  # hazard


class Blocks(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.convs = nn.ModuleList([nn.Linear(d, d) for _ in range(3)])

    def forward(self, x, indices=0):
        return self.convs[indices](x)

    def get_block(self, i):
        return SubModule(self, i)


class SubModule(nn.Module):
    def __init__(self, main_module, indices):
        super().__init__()
        self.main_module = main_module
        self.indices = indices

    def forward(self, x):
        return self.main_module.forward(x, self.indices)  # safe


class OwnBlocks(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.w = nn.Parameter(torch.randn(d, d))

    def forward(self, x, indices=0):
        return x @ self.w

    def get_block(self, i):
        return OwnSub(self, i)


class OwnSub(nn.Module):
    def __init__(self, main_module, indices):
        super().__init__()
        self.main_module = main_module
        self.indices = indices

    def forward(self, x):
        return self.main_module.forward(x, self.indices)  # hazard
"""


def _lines(mark: str) -> list[int]:
    return [i for i, line in enumerate(SOURCE.split("\n"), 1) if line.endswith(f"# {mark}")]


def test_a_child_forward_is_judged_by_the_class_stored_or_passed():
    found = sorted(f.line for f in check_source("nets.py", SOURCE) if f.code == "ZG302")
    assert found == _lines("hazard")
    assert not set(found) & set(_lines("safe"))


SHAPES = """
import torch
from torch import nn


class Param(nn.Module):
    def __init__(self, t):
        super().__init__()
        self.param = nn.Parameter(t)

    def forward(self, x=None):
        return self.param

    def output_shape(self):
        return list(self.param.shape)


class Core(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.d = d

    def forward(self, x):
        return self.fc(x)

    def output_shape(self):
        return [self.d]


class Encoder(nn.Module):
    def __init__(self, cores):
        super().__init__()
        self.cores = nn.ModuleDict(cores)

    def forward(self, x):
        return torch.cat([self.cores[k](x[k]) for k in x], -1)

    def output_shape(self):
        return [sum(self.cores[k].output_shape()[0] for k in self.cores)]


class Group(nn.Module):
    def __init__(self, cores, d):
        super().__init__()
        self.nets = nn.ModuleDict()
        self.nets["encoder"] = Encoder(cores)
        self.head = nn.Linear(self.nets["encoder"].output_shape()[0], d)

    def forward(self, x):
        return self.head(self.nets["encoder"](x))
"""


def test_a_method_of_a_child_of_no_named_class_counts_only_when_every_class_defining_it_uses_parameters():
    # `self.cores[k].output_shape()`: `Param`'s sizes its parameter, `Core`'s reads none; which one a core is the
    # name does not say, so `Encoder.output_shape()` computes with none of its parameters
    assert [f for f in check_source("shapes.py", SHAPES) if f.code.startswith("ZG3")] == []
