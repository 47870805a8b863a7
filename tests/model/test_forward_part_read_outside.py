"""A method run on the built module outside any forward (`apply_max_norm`, called by the training loop) that calls a
part of the module's forward reading the module's own parameters (`self.make_weight()`) reads their values where
ZeRO-3 keeps them partitioned: placeholders (ZG109, beside ZG302's bypassed hooks). Calling the module itself
(`self(x)`) runs its hooks."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
import torch
from torch import nn


class LoRA(nn.Module):
    def __init__(self, dim, rank):
        super().__init__()
        self.up = nn.Parameter(torch.zeros(dim, rank))
        self.down = nn.Parameter(torch.randn(rank, dim))
        self.scale = 1.0

    def make_weight(self):
        return self.up @ self.down

    def forward(self, x):
        return x @ self.make_weight()

    @torch.no_grad()
    def apply_max_norm(self, max_norm, x):
        norm = {measured}.norm()
        if norm > max_norm:
            self.scale = max_norm / norm
        return norm
"""


def zg109_lines(measured: str) -> list[int]:
    found = check_source("lora.py", textwrap.dedent(SOURCE.format(measured=measured)))
    return [f.line for f in found if f.code == "ZG109"]


def test_a_forward_part_called_outside_forward_reads_placeholders():
    assert zg109_lines("self.make_weight()") == [21]


def test_the_module_called_as_a_whole_runs_its_hooks():
    assert zg109_lines("self(x)") == []
