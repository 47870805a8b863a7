"""A loop over this rank's share of a sequence that runs a model: a slice whose bounds come from the rank
(`items[rank::world]`, `feats[start:end]` for `start = rank * step`), the rank's piece of a split
(`np.array_split(items, world)[rank]`, `chunks[rank]` of a local holding the split), walked directly, inside
`enumerate` or a logger's wrapper, or through a local, with the rank named by a local or asked inline (`counts.rank_share`, read by `divergence._count_taint`; ZG201). Shares differ in length by the remainder,
so ranks make different numbers of parameter all-gathers. Look-alikes: the rank's single item handed to the model
once, a share walked by tensor maths only, a slice with configured bounds, a count every rank computes alike."""

from __future__ import annotations

import textwrap

from zgen.model import check_source


def found(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("m.py", textwrap.dedent(source)) if f.code.startswith("ZG2")]


HAZARDS = """
    import numpy as np
    import torch
    import torch.distributed as dist
    from torch import nn


    def score_slices(model, sims, logger):
        world = dist.get_world_size()
        rank = dist.get_rank()
        step = sims.size(0) // world + 1
        start = rank * step
        end = min(sims.size(0), start + step)
        out = []
        for i, row in enumerate(logger.log_every(sims[start:end], 50)):
            out.append(model(row))
        return out


    def strided(model, items):
        rank = dist.get_rank()
        world = dist.get_world_size()
        shard = items[rank::world]
        return [model(x) for x in shard]


    def split_pieces(model, items):
        world = dist.get_world_size()
        for x in np.array_split(items, world)[dist.get_rank()]:
            model(x)


    class Scorer(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Linear(8, 1)

        def forward(self, items):
            world = dist.get_world_size()
            per = len(items) // world + 1
            outs = []
            for x in items[dist.get_rank() * per:(dist.get_rank() + 1) * per]:
                outs.append(self.head(x))
            return outs


    def piece_of_a_local_split(model, cases):
        rank = dist.get_rank()
        chunks = torch.tensor_split(cases, dist.get_world_size())
        for case in chunks[rank]:
            model(case)


    def rank_asked_inline(model, cases):
        mine = torch.tensor_split(cases, dist.get_world_size())[dist.get_rank()]
        for case in mine:
            model(case)
"""


def test_a_loop_over_this_ranks_share_runs_the_model_as_often_as_the_share_is_long():
    assert found(HAZARDS) == [
        ("ZG201", 15), ("ZG201", 24), ("ZG201", 29), ("ZG201", 42), ("ZG201", 50), ("ZG201", 56),
    ]


def test_one_item_per_rank_shares_without_a_model_and_configured_slices_are_clean():
    assert found("""
        import torch
        import torch.distributed as dist
        from torch import nn


        def one_item(model, feats):
            rank = dist.get_rank()
            return model(feats[rank])


        def maths_only(model, feats):
            rank = dist.get_rank()
            total = model(feats)
            for f in feats[rank * 4:(rank + 1) * 4]:
                total = total + f.sum()
            return total


        def same_count(model, feats, per_rank):
            rank = dist.get_rank()
            out = []
            for i in range(per_rank):
                out.append(model(feats[min(rank * per_rank + i, feats.size(0) - 1)]))
            return out


        class Head(nn.Module):
            def __init__(self, k):
                super().__init__()
                self.blocks = nn.ModuleList([nn.Linear(8, 8) for _ in range(6)])
                self.k = k

            def forward(self, x):
                rank = dist.get_rank()
                for block in self.blocks[:self.k]:
                    x = block(x)
                return x[rank::2]
    """) == []
