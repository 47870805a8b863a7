"""Submodules picked out of a module container by a key that differs per rank (`analysis/picks.py`): the rank
(ZG201), a random draw (ZG202), an index this rank's values choose (ZG203); called at once, through a local or an
attribute, iterated as a slice; against keys that are the same on every rank."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

NET = """
import random
import torch
import torch.distributed as dist
from torch import nn


class Experts(nn.Module):
    def __init__(self, experts, n_tasks=4):
        super().__init__()
        self.experts = nn.ModuleList(experts)
        self.heads = nn.ModuleDict({{str(t): nn.Linear(512, 512) for t in range(n_tasks)}})
        self.scorers = nn.ModuleList([nn.Linear(512, 1) for _ in range(n_tasks)])
        self.task = 0
        self.register_buffer("usage", torch.zeros(n_tasks))
{extra}
    def forward(self, x):
        out = []
{body}
        return out
"""


def codes(body: str, extra: str = "") -> list[str]:
    source = NET.format(
        body=textwrap.indent(textwrap.dedent(body), " " * 8), extra=textwrap.indent(textwrap.dedent(extra), " " * 4)
    )
    return sorted(f.code for f in check_source("m.py", source) if f.code.startswith("ZG2"))


def test_a_slice_of_the_experts_chosen_by_the_rank_and_bound_to_a_local():
    assert codes("""
        rank, world = dist.get_rank(), dist.get_world_size()
        per = len(self.experts) // world
        start = rank * per
        chosen = slice(start, start + per)
        experts = self.experts[chosen]
        for expert in experts:
            out.append(expert(x))
    """) == ["ZG201"]


def test_the_rank_reaches_the_key_through_a_table_of_offsets():
    # `offsets[rank]` is this rank's share of a table; used as a module key it names this rank's modules
    assert codes("""
        offsets = torch.tensor([0, 2, 4, 6])
        first = offsets[dist.get_rank()].item()
        for expert in self.experts[first:first + 2]:
            out.append(expert(x))
    """) == ["ZG201"]


def test_one_module_picked_by_the_rank_through_getattr_or_an_attribute():
    assert codes("""
        head = getattr(self, f"head_{dist.get_rank()}")
        out.append(head(x))
    """, extra="""
    def build(self):
        self.head_0 = nn.Linear(512, 512)
    """) == ["ZG201"]
    assert codes("""
        self.active = self.heads[str(dist.get_rank() % 4)]
        out.append(self.active(x))
    """) == ["ZG201"]


def test_a_random_module_picked_from_the_container():
    assert codes("""
        k = random.randrange(len(self.experts))
        expert = self.experts[k].to(x.device)
        out.append(expert(x))
    """) == ["ZG202"]


def test_an_index_the_values_of_this_ranks_scores_choose():
    assert codes("""
        scores = torch.stack([s(x).mean() for s in self.scorers])
        best = torch.argmax(scores)
        expert = self.heads[str(best.item())]
        out.append(expert(x))
    """) == ["ZG203"]
    assert codes("""
        top = x.mean(0).topk(2).indices
        for i in top.tolist():
            out.append(self.experts[i](x))
    """) == ["ZG203"]


def test_keys_the_same_on_every_rank_pick_nothing():
    # a configured task, the module's own usage statistics, a loop index over every expert, a literal slice
    assert codes("""
        out.append(self.heads[str(self.task)](x))
        least = self.usage.argmin()
        out.append(self.experts[least](x))
        for i in range(len(self.experts)):
            out.append(self.experts[i](x))
        for expert in self.experts[1:]:
            out.append(expert(x))
    """) == []


def test_the_rank_indexing_data_or_only_reading_a_module_is_no_pick():
    # the rank picks this rank's share of the input, every expert runs; the picked module is only moved
    assert codes("""
        piece = x.chunk(dist.get_world_size())[dist.get_rank()]
        for expert in self.experts:
            out.append(expert(piece))
        keep = self.experts[dist.get_rank()]
        keep.to("cpu")
    """) == []
