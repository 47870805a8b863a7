"""A method other than forward that runs on the built model and computes with parameters is a hook bypass (ZG303),
reported at the read as well as the placeholder read it is (ZG109): `sample_p` reading the module's own mean, a
plotting getter reading a child's weight. Look-alikes: printing (`extra_repr`), sizes and devices, a parameter
handed to the module's own `self.forward` (ZG302's), and a method that only runs children."""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

HEADER = """
import torch
from torch import nn


class Latent(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.net = nn.Linear(d, d)
        self.mean = nn.Parameter(torch.zeros(d, 4096))
        self.head = nn.ModuleList([nn.Linear(d, 4096)])

    def forward(self, x):
        return self.net(x) @ self.mean
"""

HAZARDS = {
    "a sampling method computes with the module's own parameter": """
        def sample(self, n):
            return self.mean + torch.randn(n, 1)  # KEY
        """,
    "a getter for plotting reads a child's weight": """
        def head_weights(self):
            return self.head[0].weight.detach().cpu()  # KEY
        """,
    "a regulariser a training loop adds to the loss": """
        def penalty(self):
            return (self.mean ** 2).sum()  # KEY
        """,
}

SAFE = {
    "printing the module": """
        def extra_repr(self):
            return f"mean={self.mean.norm()}"
        """,
    "sizes and devices only": """
        def describe(self):
            return tuple(self.mean.shape), self.mean.device, self.mean.dtype
        """,
    "the parameter handed to the module's own forward": """
        def run_with(self, x):
            return self.forward(x) + self.forward(x, self.mean)
        """,
    "a method that only runs children": """
        def encode(self, x):
            return self.net(x)
        """,
}


def _found(body: str) -> tuple[list[tuple[str, int]], int | None]:
    source = textwrap.dedent(HEADER) + textwrap.indent(textwrap.dedent(body), "    ")
    key = next((i for i, line in enumerate(source.splitlines(), 1) if line.endswith("# KEY")), None)
    return [(f.code, f.line) for f in check_source("m.py", source)], key


@pytest.mark.parametrize("name", sorted(HAZARDS))
def test_the_read_is_a_hook_bypass_and_a_placeholder_read(name):
    found, key = _found(HAZARDS[name])
    assert ("ZG303", key) in found
    assert ("ZG109", key) in found


@pytest.mark.parametrize("name", sorted(SAFE))
def test_look_alike_has_no_zg303(name):
    found, _key = _found(SAFE[name])
    assert [code for code, _line in found if code == "ZG303"] == []
