"""A module's own state dict taken or loaded in a method run on the built model.

`broadcast_parameters()` on a policy, `sync_from_rank0()`: a method a training loop calls on the built model
that does `self.state_dict()` or `self.load_state_dict(sd)` handles every parameter of the module as ZeRO-3 left
it, an empty placeholder (ZG108). Its keys alone are fine, so is the same inside `GatheredParameters`, and a
module's `save`/`load` helpers are loaders by name, judged where they are called.
"""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

MODEL = """
import deepspeed
import torch
from torch import nn


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(1024, 1024)

    def forward(self, x):
        return self.net(x)

{method}
"""


def codes(method: str) -> list[str]:
    source = MODEL.format(method=textwrap.indent(textwrap.dedent(method), "    "))
    return sorted(f.code for f in check_source("m.py", source) if f.code.startswith("ZG1"))


HAZARDS = {
    "broadcast-own-state": """
def broadcast_parameters(self, rank=0):
    objects = [self.state_dict()]
    torch.distributed.broadcast_object_list(objects, rank)
""",
    "shapes-of-the-items": """
def show(self):
    for name, tensor in self.state_dict().items():
        print(name, list(tensor.shape))
""",
    "load-received-state": """
def sync_from(self, other_state):
    self.load_state_dict(other_state)
""",
}

LOOK_ALIKES = {
    "keys-only": """
def no_weight_decay(self):
    return {k for k in self.state_dict().keys() if "bias" in k}
""",
    "names-of-the-items": """
def missing(self, matched):
    for name, tensor in self.state_dict().items():
        if name not in matched:
            print(name)
""",
    "inside-gathered-parameters": """
def broadcast_parameters(self, rank=0):
    with deepspeed.zero.GatheredParameters(list(self.parameters())):
        objects = [self.state_dict()]
        torch.distributed.broadcast_object_list(objects, rank)
""",
    "state-of-another-object": """
def export(self, optimizer):
    return optimizer.state_dict()
""",
}


@pytest.mark.parametrize("case", sorted(HAZARDS))
def test_hazard_is_found(case):
    assert "ZG108" in codes(HAZARDS[case])


@pytest.mark.parametrize("case", sorted(LOOK_ALIKES))
def test_look_alike_is_clean(case):
    assert codes(LOOK_ALIKES[case]) == []
