"""Methods other than forward run on a module without its hooks (ZG303): reached by method name when the module's
class cannot be told, from a sampling method, through a local bound to a held model, or through `self.forward(...)`
called by name inside the module's own method."""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

NET = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, d=1024):
        super().__init__()
        self.null = nn.Parameter(torch.randn(4096, d))
        self.fc = nn.Linear(d, d)

    def forward_with_cond_scale(self, x, cond_scale=1.0):
        logits = self.forward(x)
        null = self.forward(x, drop=True)
        return null + (logits - null) * cond_scale

    def forward(self, x, drop=False):
        h = self.fc(x)
        if drop:
            h = h + {drop}
        return h
"""
OWN = "self.null.sum()"  # forward computes with the module's own parameter
CHILD = "self.fc(x)"  # ... or only calls its child, whose own hooks gather


def codes(source: str, drop: str = OWN) -> list[str]:
    """The ZG3 codes zgen reports for `NET` (its forward's dropped branch computing `drop`) followed by `source`."""
    text = NET.format(drop=drop) + textwrap.dedent(source)
    return sorted(f.code for f in check_source("m.py", text) if f.code == "ZG303")


HANDED_PRIOR = """
class Prior(nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net.forward_with_cond_scale(x, cond_scale=2.0)
"""

TRAINER = """
class Trainer:
    def __init__(self, net: Net, ema_net: Net, use_ema: bool):
        self.net = net
        self.ema_net = ema_net
        self.use_ema = use_ema

    def sample(self, x):
        model = self.ema_net if self.use_ema else self.net
        return {call}
"""

HAZARDS = {
    "child-of-unknown-class-runs-forward-by-name": HANDED_PRIOR,
    "sampler-hands-a-module-argument-a-method": """
class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.unets = nn.ModuleList([Net(), Net()])

    def p_sample(self, unet, x):
        return unet.forward_with_cond_scale(x, cond_scale=2.0)

    def forward(self, x):
        return self.unets[0](x)
""",
    "trainer-local-bound-to-held-model": TRAINER.format(call="model.forward_with_cond_scale(x, cond_scale=3.0)"),
}


@pytest.mark.parametrize("case", sorted(HAZARDS))
def test_hazard_is_found(case):
    assert codes(HAZARDS[case]) == ["ZG303"], case


LOOK_ALIKES = {
    # the same call, but the forward it runs by name computes only through its child, whose hooks do run
    "forward-by-name-that-only-calls-children": (HANDED_PRIOR, CHILD),
    "trainer-local-bound-to-held-model-called-whole": (TRAINER.format(call="model(x)"), OWN),
    "wrapper-delegates-by-the-same-name-to-a-module-of-no-known-class": ("""
class Wrapper(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def generate(self, x):
        return self.inner.generate(x)

    def forward(self, x):
        return self.inner(x)
""", OWN),
    "same-name-method-of-a-non-module": ("""
class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = Net()

    def forward(self, x):
        dist = torch.distributions.Normal(self.net(x), 1.0)
        return dist.forward_with_cond_scale(x)
""", OWN),
}


@pytest.mark.parametrize("case", sorted(LOOK_ALIKES))
def test_look_alike_is_clean(case):
    source, drop = LOOK_ALIKES[case]
    assert codes(source, drop) == [], case


SHELL = """
class Shell(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Net()

    def forward(self, x):
        return self.inner(x)
"""


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("def sample(unet, x, solver):\n    return solver(fn=unet.forward, x=x)\n", ["ZG302"]),
        ("class Trainer:\n    def __init__(self, unet: Net):\n        self.unet = unet\n\n"
         "    def step(self, x):\n        return self.unet.forward(x)\n", ["ZG302"]),
        ("def sample(unet, x, solver):\n    return solver(fn=unet, x=x)\n", []),
        # a module that owns no parameter itself: its children's hooks still run inside its forward
        (SHELL + "\ndef sample(shell: Shell, x, solver):\n    return solver(fn=shell.forward, x=x)\n", []),
    ],
    ids=["function-hands-on-a-module-forward", "trainer-calls-held-forward", "function-hands-on-the-module",
         "forward-of-a-module-without-own-parameters"],
)
def test_forward_bypass_outside_the_model_classes(source, expected):
    text = NET.format(drop=OWN) + source
    assert sorted(f.code for f in check_source("m.py", text) if f.code == "ZG302" and f.line > len(NET.splitlines())) == expected
