"""A comprehension collecting container items by keys drawn at random (`qs = [self.qs[i] for i in
np.random.choice(n, 2)]`), the list run afterwards (`[q(x) for q in qs]`): ranks run different modules
(`picks._collected`, ZG202). The same comprehension over a fixed range, or every module run and a random subset
of the outputs taken, stays clean."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

ENS = """
import numpy as np
import torch
import torch.nn as nn

class Ens(nn.Module):
    def __init__(self, n=5):
        super().__init__()
        self.qs = nn.ModuleList([nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1)) for _ in range(n)])

    def forward(self, x, subset=True):
{body}
"""


def codes(body: str) -> list[str]:
    source = textwrap.dedent(ENS).replace("{body}", textwrap.indent(textwrap.dedent(body), " " * 8))
    return [f.code for f in check_source("m.py", source)]


def test_modules_collected_by_drawn_keys_differ_per_rank():
    assert codes("""
        picked = [self.qs[i] for i in np.random.choice(len(self.qs), size=2)]
        return torch.stack([q(x) for q in picked]).min(0)[0]
    """) == ["ZG202"]
    assert codes("""
        if subset:
            chosen = [self.qs[k] for k in torch.randperm(len(self.qs))[:2].tolist()]
        else:
            chosen = self.qs
        outs = []
        for q in chosen:
            outs.append(q(x))
        return torch.stack(outs).min(0)[0]
    """) == ["ZG202"]


def test_a_fixed_collection_or_a_random_subset_of_outputs_stays_clean():
    assert codes("""
        picked = [self.qs[i] for i in range(2)]
        return torch.stack([q(x) for q in picked]).min(0)[0]
    """) == []
    assert codes("""
        vals = torch.stack([q(x) for q in self.qs])
        return vals[torch.randperm(len(self.qs))[:2]].min(0)[0]
    """) == []
