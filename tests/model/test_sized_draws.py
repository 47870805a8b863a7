"""A draw of a given size holds that many items on every rank; a seed of the rank's own orders, it does not count.

`for idx in np.random.choice(n, k, replace=False): act = self.fc(x[:, idx])` runs `self.fc` `k` times on every
rank: which relations were drawn differs, how many does not. A loop over `torch.randperm(x.size(0))` runs as often
as this rank's batch is long (ZG204), and one whose body runs the item it drew (`self.critics[i]`) runs different
critics per rank (ZG202). A loader made with `seed=seed + rank` hands each rank its own order of the same number of
mini-batches, so the loop over it is no rank decision.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

DRAWS = """
import numpy as np
import torch
import torch.distributed as dist
from torch import nn


class Relations(nn.Module):
    def __init__(self, n, k):
        super().__init__()
        self.n, self.k = n, k
        self.fc = nn.Linear(1024, 1024)
        self.critics = nn.ModuleList([nn.Linear(1024, 1024) for _ in range(n)])

    def forward(self, x):
        out = 0
        for idx in np.random.choice(self.n, self.k, replace=False):
            out = out + self.fc(x[:, idx])
        picked = torch.randperm(self.n)[: self.k]
        for i in picked:
            out = out + self.fc(x[:, i])
        return out

    def per_sample(self, x):
        for j in torch.randperm(x.size(0)):
            x = self.fc(x)
        return x

    def ensemble(self, x):
        return sum(self.critics[i](x) for i in np.random.choice(self.n, self.k, replace=False))


class Worker:
    def __init__(self, model, seed):
        self.model = model
        self.seed = seed

    def train(self, data, size):
        loader = make_iterator(data, size, seed=self.seed + dist.get_rank())
        for batch in loader:
            self.model(batch)
"""


def _found(source: str) -> list[tuple[str, int]]:
    found = check_source("model.py", textwrap.dedent(source))
    return sorted((f.code, f.line) for f in found if f.code.startswith("ZG2"))


def test_a_draw_of_a_given_size_counts_only_its_size():
    found = _found(DRAWS)
    assert not [f for f in found if f[1] in (18, 21)]  # `k` relations on every rank
    assert ("ZG204", 25) in found  # as many as this rank's batch is long
    assert ("ZG202", 30) in found  # which critics run differs per rank


def test_a_seed_of_the_rank_orders_the_batches_it_does_not_count_them():
    assert not [f for f in _found(DRAWS) if f[1] >= 38]
