"""An expert picked by an index a submodule's output chooses (`k = self.router(x).argmax().item()`;
`self.experts[k](x)`): the router's output for this rank's input is data (`picks._on_self`), unlike the module's own
state (`self.usage.argmin()`, also moved to the input's device)."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

MOE = """
import torch
import torch.nn as nn

class MoE(nn.Module):
    def __init__(self, n=8):
        super().__init__()
        self.router = nn.Linear(1024, n)
        self.register_buffer("usage", torch.zeros(n))
        self.experts = nn.ModuleList([nn.Linear(1024, 1024) for _ in range(n)])

    def forward(self, x):
        k = {key}
        return self.experts[k](x)
"""


def codes(source: str) -> list[str]:
    return [f.code for f in check_source("m.py", textwrap.dedent(source))]


def test_an_expert_picked_by_the_routers_argmax_differs_per_rank():
    assert codes(MOE.replace("{key}", "self.router(x.mean(0)).argmax().item()")) == ["ZG203"]
    assert codes(MOE.replace("{key}", "int(self.router(x).argmax(-1)[0])")) == ["ZG203"]


def test_an_expert_picked_by_the_modules_own_state_is_the_same_everywhere():
    assert codes(MOE.replace("{key}", "self.usage.to(x.device).argmin().item()")) == []
    assert codes(MOE.replace("{key}", "self.usage.float().argmin()")) == []
