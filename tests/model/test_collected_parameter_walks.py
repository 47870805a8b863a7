"""A forward (or a helper it reaches) that collects a child's parameters (`list(self.model.parameters())`,
`dict(self.model.named_parameters())` then `[by_name[n] for n in names]`, or what a helper of the class returns,
`weights, buffers = self._get_weights_buffers()`) and hands the collection to a call (`graph(x, *weights)`,
`make_fx(m, extra=weights + buffers)`) reads those parameters with no hook of the child running (ZG301, reported
where they are collected: `params._Finder._handed_collection`). A collection only measured (`len`), gathered
(`GatheredParameters`), handed to a call that is handed the child too (`functional_call(self.model, params, x)`,
which runs it through its hooks), a device read and a walk of the module's own parameters are not."""

from __future__ import annotations

from package_check import found_in_package

HAZARDS = """
from torch import nn


class Compiled(nn.Module):
    def __init__(self, model, graph):
        super().__init__()
        self.model = model
        self.graph = graph

    def forward(self, x):
        ps = list(self.model.parameters())
        return self.graph(x, *ps)


class ByName(nn.Module):
    def __init__(self, model, graph, names):
        super().__init__()
        self.model = model
        self.graph = graph
        self.names = names

    def _weights_buffers(self):
        by_name = dict(self.model.named_parameters())
        weights = [by_name[n] for n in self.names]
        return weights, list(self.model.buffers())

    def _compiled(self, x):
        weights, buffers = self._weights_buffers()
        return self.graph(*(x + weights + buffers))

    def forward(self, x):
        return self._compiled([x])
"""

LOOK_ALIKES = """
import deepspeed
import torch
from torch import nn
from torch.func import functional_call


class Functional(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def _params(self):
        return dict(self.model.named_parameters())

    def forward(self, x):
        params = self._params()
        return functional_call(self.model, params, (x,))


class Counted(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        weights = list(self.model.parameters())
        dev = next(self.model.parameters()).device
        return self.model(x.to(dev)) * len(weights)


class Gathered(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        ps = list(self.model.parameters())
        with deepspeed.zero.GatheredParameters(ps):
            s = torch.stack([p.sum() for p in ps]).sum()
        return self.model(x) * s


class Own(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.w = nn.Parameter(torch.randn(d, d))

    def forward(self, x):
        ps = list(self.parameters())
        return torch.nn.functional.linear(x, *ps)
"""


def test_a_child_s_parameters_collected_and_handed_on_are_read(tmp_path):
    assert found_in_package(tmp_path, {"model.py": HAZARDS}, "model.py", prefix="ZG3") == [("ZG301", 12), ("ZG301", 29)]


def test_measured_gathered_functional_and_own_collections_stay_clean(tmp_path):
    assert found_in_package(tmp_path, {"model.py": LOOK_ALIKES}, "model.py", prefix="ZG3") == []
