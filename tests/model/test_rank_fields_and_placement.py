"""Which fields of a trainer's record are per rank (issue 20, blind28's joeynmt false alarm).

A trainer that adds to one field of its statistics only on rank 0 (`if self.rank == 0: self.stats.seen += n`) makes
that field per rank, not the whole object: a validation every `self.stats.steps % freq == 0` steps runs on every
rank alike, while one gated on `self.stats.seen` does not (ZG201). A checkpoint loaded with `map_location` naming this
rank's device holds the same values on every rank: the steps it restores decide nothing per rank (one chosen by the
rank, `shard=rank`, does). The whole object handed to another function still carries its per-rank field.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

TRAINER = """
import torch
from torch import nn


class Trainer:
    def __init__(self, model, rank, freq, handler):
        self.model = model
        self.rank = rank
        self.freq = freq
        self.handler = handler
        self.stats = Stats()

    def resume(self, path):
        ckpt = torch.load(path, map_location=f"cuda:{self.rank}")
        self.stats.steps = ckpt["steps"]

    def fit(self, loader, limit):
        for batch in loader:
            loss = self.model(batch).mean()
            loss.backward()
            self.stats.steps += 1
            if self.rank == 0:
                self.stats.seen += batch.shape[0]
            if {test}:
                self.validate(loader)

    def validate(self, loader):
        for batch in loader:
            self.model(batch)


class Stats:
    def __init__(self):
        self.steps = 0
        self.seen = 0
"""


def _rank_findings(test: str) -> list[tuple[str, int]]:
    source = textwrap.dedent(TRAINER).replace("{test}", test)
    return [(f.code, f.line) for f in check_source("trainer.py", source) if f.code == "ZG201"]


def test_a_field_added_to_only_on_rank_zero_decides_per_rank():
    assert _rank_findings("self.stats.seen > limit") == [("ZG201", 25)]


def test_the_other_fields_of_that_record_and_a_checkpoint_placed_on_this_ranks_device_decide_alike():
    assert _rank_findings("self.stats.steps % self.freq == 0") == []


def test_the_whole_record_handed_on_carries_its_per_rank_field():
    assert _rank_findings("self.handler.should_validate(self.stats)") == [("ZG201", 25)]


RESUMED = """
import torch
import torch.distributed as dist


def resume_and_train(model, path, loader, k):
    rank = dist.get_rank()
    ckpt = torch.load(path, {placed})
    start = ckpt["steps"]
    for step, batch in enumerate(loader, start):
        if step % k == 0:
            model(batch)
"""


def test_a_checkpoint_loaded_onto_this_ranks_device_restores_the_same_steps_everywhere():
    source = textwrap.dedent(RESUMED).replace("{placed}", 'map_location=f"cuda:{rank}"')
    assert [f.code for f in check_source("train.py", source) if f.code.startswith("ZG2")] == []


def test_a_checkpoint_chosen_by_the_rank_restores_per_rank_steps():
    # (the step the count starts from decides the test in the loop; how many batches the loop walks it does not)
    source = textwrap.dedent(RESUMED).replace("{placed}", "shard=rank")
    assert [(f.code, f.line) for f in check_source("train.py", source) if f.code.startswith("ZG2")] == [("ZG201", 11)]
