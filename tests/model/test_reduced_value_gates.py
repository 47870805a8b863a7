"""A submodule that runs only when one value reduced from this rank's tensors passes a test runs on some ranks only
(ZG203): `(labels > 0).sum() > 0`, `int(labels.sum()) > 0`, `float(h.mean()) > 0.5`, and a
local holding such a number (`n_pos = int((labels > 0).sum())` ... `if n_pos > 0`). A test on a setting, or on a
value every rank agreed on, is no finding."""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

SOURCE = """
import torch
import torch.distributed as dist
from torch import nn


class Net(nn.Module):
    def __init__(self, d, threshold):
        super().__init__()
        self.body = nn.Linear(d, d)
        self.aux = nn.Linear(d, d)
        self.threshold = threshold

    def forward(self, x, labels):
        h = self.body(x)
{gate}
            h = self.aux(h)
        return h
"""


def zg2(gate: str) -> list[str]:
    source = textwrap.dedent(SOURCE).format(gate=textwrap.indent(textwrap.dedent(gate).strip("\n"), " " * 8))
    return [f.code for f in check_source("m.py", source) if f.code.startswith("ZG2")]


@pytest.mark.parametrize("gate", [
    "if (labels > 0).sum() > 0:",
    "if int(labels.sum()) > 0:",
    "if float(h.mean()) > 0.5:",
    "if (~(labels == 0)).sum() >= 1:",
    "n_pos = int((labels > 0).sum())\nif n_pos > 0:",
])
def test_a_value_reduced_from_this_ranks_tensors_gates_the_submodule(gate):
    assert zg2(gate) == ["ZG203"]


@pytest.mark.parametrize("gate", [
    "if self.threshold > 0:",
    "n = labels.sum()\ndist.all_reduce(n)\nif n.item() > 0:",
    "if labels.dim() == 2:",
])
def test_a_setting_an_agreed_value_or_a_shape_is_no_finding(gate):
    assert zg2(gate) == []
