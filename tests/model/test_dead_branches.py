"""Blocks that never run.

The body of an `if` whose test is a constant that is false (`if False:`, `if 0:`, `if 0 > 0:`, a debug switch left
off) never runs, nor does the `else` of one that is true: what it would do to a partitioned model is no hazard. A test
that reads anything (`if epochs > 0:`) may go either way.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source


def _found(source: str) -> list[tuple[str, int]]:
    found = check_source("runner.py", textwrap.dedent(source))
    return sorted((f.code, f.line) for f in found if f.code.startswith("ZG"))


SOURCE = """
import torch
from torch import nn


class Runner:
    def __init__(self, model: nn.Module):
        self.vae = model

    def train(self, path, epochs=0):
        if 0 > 0:
            self.vae.load_state_dict(torch.load(path))
        if False:
            self.vae.load_state_dict(torch.load(path))
        if True:
            self.vae.load_state_dict(torch.load(path))
        else:
            self.vae.load_state_dict(torch.load(path))
        if epochs > 0:
            self.vae.load_state_dict(torch.load(path))
"""


def test_code_under_a_constant_false_test_is_never_run():
    assert _found(SOURCE) == [("ZG108", 16), ("ZG108", 20)]
