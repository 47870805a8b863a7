"""Initialisers a factory makes: `init = factory.create(**cfg)`, then `init(child.weight)` in `__init__`.

A network builder often registers `nn.init.*` functions behind a factory and calls what it returns on each
layer. The callable cannot be read, but a call of it whose result is dropped, given one parameter only, can
matter only through what it does to that parameter: it writes it. On a child already built under `zero.Init`
that write is lost (ZG103); on the module's own parameter in its own `__init__` it is safe, and a call whose
result is kept, or a callable not made by a call in this function, is no such write.
"""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

NET = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, factory, cfg):
        super().__init__()
        self.fc = nn.Linear(1024, 1024)
        self.mu = nn.Linear(1024, 1024)
        self.sigma = nn.Parameter(torch.zeros(1024, 1024))
        init = factory.create(**cfg)
{body}

    def forward(self, x):
        return self.mu(self.fc(x)) @ self.sigma
"""


def codes(body: str) -> list[str]:
    source = NET.format(body=textwrap.indent(textwrap.dedent(body), " " * 8))
    return sorted(f.code for f in check_source("m.py", source) if f.code.startswith("ZG1"))


HAZARDS = {
    "a-child-weight": "init(self.mu.weight)\n",
    "each-linear-of-a-modules-walk": """
    for m in self.modules():
        if isinstance(m, nn.Linear):
            init(m.weight)
""",
    "with-keyword-options": "init(self.fc.weight, gain=0.5)\n",
}

LOOK_ALIKES = {
    "own-parameter-in-own-init": "init(self.sigma)\n",
    "result-kept": "scale = init(self.mu.weight)\n",
    "two-positional-arguments": "init(self.mu.weight, self.fc.weight)\n",
    "a-buffer": 'self.register_buffer("scale", torch.ones(1024))\ninit(self.scale)\n',
}


@pytest.mark.parametrize("case", sorted(HAZARDS))
def test_hazard_is_found(case):
    assert "ZG103" in codes(HAZARDS[case])


@pytest.mark.parametrize("case", sorted(LOOK_ALIKES))
def test_look_alike_is_clean(case):
    assert codes(LOOK_ALIKES[case]) == []
