"""Two facts about what differs per rank. A list a module's method fills from this rank's targets (`self.id.append(
mask.nonzero())`, else `None`) holds this rank's data: forward running a tail layer only where it holds indices runs
different layers per rank (ZG203), where a list filled with settings does not. And the number of batches of a loader
(`len(train_loader)`) is the same on every rank, a distributed sampler splitting the data evenly: a loop over the
epochs computed from it is no data-dependent count, where one over this rank's batch length is (ZG204)."""

from __future__ import annotations

import textwrap

from package_check import TINY_NET

from zgen.model import check_source

SOFTMAX = """
import torch
from torch import nn


class AdaptiveSoftmax(nn.Module):
    def __init__(self, dim, cutoffs):
        super().__init__()
        self.cutoffs = cutoffs
        self.head = nn.Linear(dim, cutoffs[0] + len(cutoffs) - 1)
        self.tail = nn.ModuleList(nn.Sequential(nn.Linear(dim, dim // 4), nn.Linear(dim // 4, c)) for c in cutoffs[1:])

    def set_target(self, target):
        self.id = []
        for i in range(len(self.cutoffs) - 1):
            mask = target.ge(self.cutoffs[i]).mul(target.lt(self.cutoffs[i + 1]))
            if mask.sum() > 0:
                self.id.append({filled})
            else:
                self.id.append(None)

    def forward(self, inp):
        output = [self.head(inp)]
        for i in range(len(self.id)):
            if self.id[i] is not None:
                output.append(self.tail[i](inp))
        return output
"""


def zg2(source: str, **parts: str) -> list[str]:
    found = check_source("m.py", textwrap.dedent(source.format(**parts)))
    return sorted({f.code for f in found if f.code.startswith("ZG2")})


def test_a_list_filled_from_this_ranks_targets_gates_the_tails():
    assert zg2(SOFTMAX, filled="mask.float().nonzero().squeeze(1)") == ["ZG203"]


def test_a_list_filled_with_settings_gates_nothing_per_rank():
    assert zg2(SOFTMAX, filled="self.cutoffs[i]") == []


TRAIN = """
from torch import nn


""" + TINY_NET + """

def train(model: Net, train_loader, batch, steps_done):
    epochs = steps_done // len({sized})
    for epoch in range(epochs):
        model(batch).mean().backward()
"""


def test_a_count_of_epochs_from_a_loaders_length_is_the_same_on_every_rank():
    assert zg2(TRAIN, sized="train_loader") == []


def test_a_count_from_this_ranks_batch_length_is_not():
    assert zg2(TRAIN, sized="batch") == ["ZG204"]
