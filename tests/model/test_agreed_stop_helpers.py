"""A decoding loop's stop test written as a method of the class that all-reduces the flag before returning it
(`if self._should_stop(tokens): break`, `taint.agreed_use` of a call, `agreed_method`): every rank leaves at the same
step, in a module's method and in a plain sampler; the same helper without the collective stays ZG204."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

LM = """
import torch
import torch.nn as nn
import torch.distributed as dist

class LM(nn.Module):
    def __init__(self, eos):
        super().__init__()
        self.eos = eos
        self.emb = nn.Embedding(32000, 1024)
        self.head = nn.Linear(1024, 32000)

    def forward(self, ids):
        return self.head(self.emb(ids))

    def _should_stop(self, tokens):
        flag = (tokens[:, -1] == self.eos).all().float()
        {reduce}
        return flag.item() > 0

    @torch.no_grad()
    def generate(self, tokens, n):
        for _ in range(n):
            nxt = self(tokens)[:, -1].argmax(-1)
            tokens = torch.cat([tokens, nxt[:, None]], 1)
            if self._should_stop(tokens):
                break
        return tokens
"""

SAMPLER = """
import torch
import torch.nn as nn
import torch.distributed as dist

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(32000, 1024)
        self.head = nn.Linear(1024, 32000)

    def forward(self, ids):
        return self.head(self.emb(ids))

class Sampler:
    def __init__(self, model: Net, eos: int):
        self.model = model
        self.eos = eos

    def _finished(self, tokens):
        flag = (tokens[:, -1] == self.eos).all().float()
        {reduce}
        return flag.item() > 0

    @torch.no_grad()
    def sample(self, tokens, n):
        for _ in range(n):
            nxt = self.model(tokens)[:, -1].argmax(-1)
            tokens = torch.cat([tokens, nxt[:, None]], 1)
            if self._finished(tokens):
                break
        return tokens
"""

REDUCE = "dist.all_reduce(flag, op=dist.ReduceOp.MIN)"


def codes(source: str) -> list[str]:
    return [f.code for f in check_source("m.py", textwrap.dedent(source))]


def test_a_stop_helper_on_this_ranks_tokens_ends_the_loop_per_rank():
    assert codes(LM.replace("{reduce}", "pass")) == ["ZG204"]
    assert codes(SAMPLER.replace("{reduce}", "pass")) == ["ZG204"]


def test_a_stop_helper_that_all_reduces_its_flag_is_the_same_on_every_rank():
    assert codes(LM.replace("{reduce}", REDUCE)) == []
    assert codes(SAMPLER.replace("{reduce}", REDUCE)) == []
