"""Blocks run on the items of an optional input.

`[encode(s) for encode, s in zip(self.state_encoders, states)]` under `if exists(states):` runs each block of the
container on an item of the optional input: a rank called without `states` skips every block's gather (ZG205), as it
would skip a layer run on the input itself. Blocks paired with the items of something else (the module's own
settings) run on those, and a rank without the input only changes what is added.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source


def _found(source: str) -> list[tuple[str, int]]:
    found = check_source("model.py", textwrap.dedent(source))
    return sorted((f.code, f.line) for f in found if f.code.startswith("ZG2"))


HAZARDS = """
import torch
from torch import nn


def exists(v):
    return v is not None


class Policy(nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.body = nn.Linear(512, 512)
        self.state_encoders = nn.ModuleList([nn.Sequential(nn.Linear(d, 512), nn.SiLU()) for d in dims])

    def forward(self, x, states=None):
        h = self.body(x)
        if exists(states):
            tokens = [encode(s) for encode, s in zip(self.state_encoders, states)]
            h = h + torch.stack(tokens).sum(0)
        return h


class Looped(nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.body = nn.Linear(512, 512)
        self.state_encoders = nn.ModuleList([nn.Linear(d, 512) for d in dims])

    def forward(self, x, states=None):
        h = self.body(x)
        if states is not None:
            for encode, s in zip(self.state_encoders, states):
                h = h + encode(s)
        return h
"""


def test_blocks_run_on_an_optional_inputs_items_are_skipped_without_it():
    assert _found(HAZARDS) == [("ZG205", 18), ("ZG205", 32)]


LOOK_ALIKE = """
import torch
from torch import nn


class Policy(nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.body = nn.Linear(512, 512)
        self.dims = dims
        self.state_encoders = nn.ModuleList([nn.Linear(d, 512) for d in dims])

    def forward(self, x, indices=None):
        h = self.body(x)
        if indices is not None:
            for encode, d in zip(self.state_encoders, self.dims):
                h = h + encode(x[..., :d])[indices]
        return h
"""


def test_blocks_paired_with_settings_under_a_presence_test_are_the_callers_convention():
    assert _found(LOOK_ALIKE) == []
