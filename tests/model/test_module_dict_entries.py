"""An entry of a `ModuleDict` reached by attribute: `self.transformer.ln_f` is one of the dict's modules.

`nn.ModuleDict(dict(wte=nn.Embedding(v, d), ln_f=Norm(d)))` registers each value as a child under its key, and
`self.transformer.ln_f` is that child (`ModuleDict.__getattr__`). Under `zero.Init` it is partitioned once built, so
its own initialiser called from the parent's `__init__` (`self.transformer.ln_f.reset_parameters()`) writes a
placeholder (ZG103), like the same call on a plain child. A method of the dict itself (`keys`, `update`), an entry
owning no parameter, or the call inside a gather is no such write.
"""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

NET = """
import deepspeed
import torch
from torch import nn


class Norm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.reset_parameters()

    def reset_parameters(self):
        nn.init.ones_(self.weight)

    def forward(self, x):
        return x * self.weight


class Net(nn.Module):
    def __init__(self, v, d):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(wte=nn.Embedding(v, d), ln_f=Norm(d), act=nn.ReLU()))
{body}

    def forward(self, x):
        return self.transformer.act(self.transformer.ln_f(self.transformer.wte(x)))
"""


def codes(body: str) -> list[str]:
    source = NET.format(body=textwrap.indent(textwrap.dedent(body), " " * 8))
    return sorted(f.code for f in check_source("m.py", source) if f.code.startswith("ZG1"))


HAZARDS = {
    "own-initialiser": "self.transformer.ln_f.reset_parameters()\n",
    "torch-layer-initialiser": "self.transformer.wte.reset_parameters()\n",
}

LOOK_ALIKES = {
    "a-method-of-the-dict": "names = list(self.transformer.keys())\n",
    "dict-updated": 'self.transformer.update({"head": nn.Linear(4, 4)})\n',
    "inside-a-gather": """
    with deepspeed.zero.GatheredParameters(list(self.transformer.ln_f.parameters()), modifier_rank=0):
        self.transformer.ln_f.reset_parameters()
""",
}


@pytest.mark.parametrize("case", sorted(HAZARDS))
def test_module_dict_entry_initialised_after_build(case: str) -> None:
    assert "ZG103" in codes(HAZARDS[case])


@pytest.mark.parametrize("case", sorted(LOOK_ALIKES))
def test_module_dict_entry_look_alike(case: str) -> None:
    assert codes(LOOK_ALIKES[case]) == []
