"""A child's method that lists its parameters (`self.network.regularization_params()`, named as `parameters()`
is) hands back partitioned parameters: computing with them in forward reads them outside their owners' hooks
(ZG301). Sklearn's `get_params()` is settings, not parameters."""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

SOURCE = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(1024, 1024)

    def regularization_params(self):
        return [self.fc.weight]

    def get_params(self):
        return {{"p": 2}}

    def forward(self, x):
        return self.fc(x)


class Penalty(nn.Module):
    def __init__(self, network: Net):
        super().__init__()
        self.network = network

    def forward(self, *args):
        params = list(self.network.{method}())
        return sum(torch.sum(p ** 2) for p in params)
"""


def codes(method: str) -> list[str]:
    source = textwrap.dedent(SOURCE).format(method=method)
    return sorted({f.code for f in check_source("m.py", source) if f.code == "ZG301"})


@pytest.mark.parametrize("method", ["parameters", "regularization_params"])
def test_a_penalty_over_the_parameters_a_child_lists(method):
    assert codes(method) == ["ZG301"]


def test_a_penalty_over_the_settings_a_child_reports():
    assert codes("get_params") == []
