"""A module holding the models it was handed in a container (`self.models = nn.ModuleList(models)`).

An ensemble of handed models owns no parameter itself, but running one of its methods (`forward_decoder`) runs the
models it holds: they gather. A beam search counting down the sentences this rank's hypotheses finished
(`num_remaining -= len(finalized)` under `if eos_idx.numel() > 0`) and leaving at zero stops calling them while
other ranks go on (ZG204). Leaving after a fixed number of steps decides nothing.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SEARCH = """
import torch
from torch import nn


class Ensemble(nn.Module):
    def __init__(self, models):
        super().__init__()
        self.models = nn.ModuleList(models)

    def forward_decoder(self, tokens, encoder_out):
        return self.models[0].decoder(tokens, encoder_out=encoder_out)


class Search(nn.Module):
    def __init__(self, models, eos=2, max_len=200):
        super().__init__()
        self.model = Ensemble(models)
        self.eos = eos
        self.max_len = max_len

    def generate(self, tokens, encoder_out):
        bsz = tokens.size(0)
        num_remaining = bsz
        for step in range(self.max_len):
            lprobs = self.model.forward_decoder(tokens[:, : step + 1], encoder_out)
            eos_idx = torch.masked_select(torch.arange(bsz), mask=lprobs.argmax(-1).eq(self.eos))
            finalized = []
            if eos_idx.numel() > 0:
                finalized = [int(i) for i in eos_idx]
                num_remaining -= len(finalized)
            if {exit}:
                break
        return tokens
"""


def _zg2(exit_test: str) -> list[tuple[str, int]]:
    source = textwrap.dedent(SEARCH.format(exit=exit_test))
    return [(f.code, f.line) for f in check_source("search.py", source) if f.code.startswith("ZG2")]


def test_a_search_leaving_when_this_ranks_sentences_are_done():
    assert _zg2("num_remaining == 0") == [("ZG204", 32)]


def test_a_search_leaving_after_a_fixed_count():
    assert _zg2("step == self.max_len - 1") == []
