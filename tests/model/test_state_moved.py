"""State moved between two built children of a module (`analysis/moved.py`, ZG108): a target or agent network
refreshed from the online one in a method run on the built model, `forward`'s helpers included; next to the same
copy inside a gather, in the constructor, and between a config's and a buffer holder's look-alikes."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

HEAD = """
import copy

import deepspeed
import torch
from torch import nn
"""

BODY = """
class Generation(nn.Module):
    def __init__(self, model, config):
        super().__init__()
        self.model = model
        self.head = nn.Linear(4096, 4096)
        self.agent_model = copy.deepcopy(self.model)
        self.agent_head = nn.Linear(4096, 4096)
        self.config = config
        self.register_buffer("stats", torch.zeros(8))
        self.batch_id = 0

    def forward(self, batch):
        if self.batch_id % 10 == 0:
            {COPY}
        self.batch_id += 1
        return self.head(self.model(batch))
"""


def _found(copy: str) -> list[tuple[str, int]]:
    start = len(textwrap.dedent(HEAD).splitlines())
    src = textwrap.dedent(HEAD) + BODY.replace("{COPY}", copy)
    return sorted((f.code, f.line - start) for f in check_source("m.py", src, None) if f.code == "ZG108")


def test_a_child_state_copied_into_another_in_forward() -> None:
    assert ("ZG108", 15) in _found("self.agent_model.load_state_dict(self.model.state_dict())")
    assert ("ZG108", 15) in _found("self.agent_head.load_state_dict(self.head.state_dict())")


def test_the_copy_inside_a_gather_and_copies_of_no_module_are_clean() -> None:
    gathered = (
        "with deepspeed.zero.GatheredParameters(list(self.parameters()), modifier_rank=0):\n"
        "                self.agent_head.load_state_dict(self.head.state_dict())"
    )
    assert _found(gathered) == []
    assert _found("self.agent_model.load_state_dict(self.config.state_dict())") == []
    assert _found("self.agent_model.load_state_dict(self.stats.state_dict())") == []


def test_a_classmethod_building_the_model_on_two_branches_then_loading_one() -> None:
    src = textwrap.dedent(HEAD) + textwrap.dedent("""
class Net(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.fc = nn.Linear(4096, 4096)

    @classmethod
    def from_checkpoint(cls, path, sharded=False):
        if not sharded:
            model = Net(None)
            model.load_state_dict(torch.load(path))
        else:
            model = Net(None)
            load_shards(model, path)
        return model
""")
    assert any(f.code == "ZG108" and src.splitlines()[f.line - 1].strip().startswith("model.load_state_dict")
               for f in check_source("m.py", src, None))
