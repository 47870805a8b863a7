"""A local an assertion ties to a setting of the module (`assert not (self.accept_memories ^ has_memories)`,
`assert has_memories == self.accept_memories`) is that setting past the assertion, on every rank that goes on: a
branch on it decides nothing per rank. Without the assertion the same branch follows this rank's data (ZG203)."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, d, accept_memories=False):
        super().__init__()
        self.accept_memories = accept_memories
        self.to_qkv = nn.Linear(d, 3 * d)
        self.to_mem_qkv = nn.Linear(d, 3 * d)

    def forward(self, x, memories=None):
        qkv = self.to_qkv(x)
        has_memories = bool(memories.abs().sum() > 0)
{check}
        if has_memories:
            qkv = qkv + self.to_mem_qkv(memories).mean(1, keepdim=True)
        return qkv
"""


def zg2(check: str) -> list[str]:
    source = textwrap.dedent(SOURCE).replace("{check}\n", check)
    return [f.code for f in check_source("attn.py", source) if f.code.startswith("ZG2")]


def test_a_branch_on_this_ranks_memories_diverges():
    assert zg2("") == ["ZG203"]


def test_the_same_branch_after_an_assertion_tying_it_to_a_setting_is_clean():
    assert zg2("        assert not (self.accept_memories ^ has_memories)\n") == []
    assert zg2("        assert has_memories == self.accept_memories\n") == []
