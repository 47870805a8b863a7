"""Layer factories: a module-level function that builds a torch layer and hands it back.

`def normed_linear(i, o): out = nn.Linear(i, o); out.weight.data *= ...; return out` and `def SNConv2d(*a):
return nn.utils.spectral_norm(nn.Conv2d(*a))` run inside some model's constructor, often of another file that
imports them: under `zero.Init` the layer is partitioned as soon as its own constructor returns, so the factory
writes (ZG101), initialises (ZG103) or re-parametrises (ZG104) a placeholder, whoever calls it. A function that
only builds, works inside a gather, wraps a module it is handed, assembles a container or uses its layer for a
value it returns is no such factory.
"""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

HEAD = """
import deepspeed
import torch
import torch.nn as nn
from torch.nn.utils import spectral_norm
"""


def codes(body: str) -> list[str]:
    source = HEAD + textwrap.dedent(body)
    return sorted(f.code for f in check_source("layers.py", source) if f.code.startswith("ZG1"))


HAZARDS = {
    "data-write": ("ZG101", """
def normed_linear(i, o, bias=True, scale=1.0):
    out = nn.Linear(i, o, bias)
    out.weight.data *= scale / out.weight.norm(dim=1, p=2, keepdim=True)
    return out
"""),
    "init-function": ("ZG103", """
def orthogonal_linear(i, o):
    lin = nn.Linear(i, o)
    nn.init.orthogonal_(lin.weight)
    return lin
"""),
    "spectral-norm-inline": ("ZG104", """
def SNConv2d(*args, **kwargs):
    return nn.utils.spectral_norm(nn.Conv2d(*args, **kwargs))
"""),
    "spectral-norm-of-a-local": ("ZG104", """
def sn_conv(*args, **kwargs):
    conv = nn.Conv2d(*args, **kwargs)
    conv = spectral_norm(conv)
    return conv
"""),
    "another-branch-returns-a-module": ("ZG104", """
class PlainConv(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3)

    def forward(self, x):
        return self.conv(x)


def SNConv2d(c, default=True):
    if default:
        return nn.utils.spectral_norm(nn.Conv2d(c, c, 3))
    return PlainConv(c)
"""),
}

LOOK_ALIKES = {
    "only-builds": """
def plain_linear(i, o):
    out = nn.Linear(i, o)
    return out
""",
    "inside-a-gather": """
def gathered_linear(i, o):
    out = nn.Linear(i, o)
    with deepspeed.zero.GatheredParameters(out.weight, modifier_rank=0):
        nn.init.orthogonal_(out.weight)
    return out
""",
    "wraps-a-module-handed-in": """
def with_spectral_norm(module):
    return spectral_norm(module)
""",
    "a-container": """
def stack(d):
    body = nn.Sequential(nn.Linear(d, d), nn.ReLU())
    nn.init.zeros_(body[0].weight)
    return body
""",
    "returns-a-value": """
def probe(d):
    lin = nn.Linear(d, d)
    nn.init.zeros_(lin.weight)
    return lin(torch.ones(d)).sum()
""",
}


@pytest.mark.parametrize("case", sorted(HAZARDS))
def test_layer_factory_hazard(case: str) -> None:
    code, body = HAZARDS[case]
    assert code in codes(body)


@pytest.mark.parametrize("case", sorted(LOOK_ALIKES))
def test_layer_factory_look_alike(case: str) -> None:
    assert codes(LOOK_ALIKES[case]) == []
