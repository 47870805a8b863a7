"""A training or evaluation loop that skips the model for a batch of one sample, or for the short last batch.

`if x.size(0) < 2: continue` (a batch norm needs two samples) and `if x.size(0) != batch_size: continue` (drop the
uneven last batch) decide on the size of the batch this rank drew: ranks whose shards differ in length skip on
different steps (ZG203). The same test of a tensor the loop did not draw from the loader (`mask.size(0) !=
batch_size`, handed in once) is every rank's alike.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

LOOP = """
import torch


def train(model, loader, batch_size, mask):
    for x, y in loader:
        if {test}:
            continue
        model(x).sum().backward()
"""


def _zg2(test: str) -> list[tuple[str, int]]:
    source = textwrap.dedent(LOOP.format(test=test))
    return [(f.code, f.line) for f in check_source("train.py", source) if f.code.startswith("ZG2")]


def test_a_batch_of_one_or_the_short_last_batch_skips_the_model():
    assert _zg2("x.size(0) < 2") == [("ZG203", 7)]
    assert _zg2("2 > x.shape[0]") == [("ZG203", 7)]
    assert _zg2("x.size(0) != batch_size") == [("ZG203", 7)]


def test_a_tensor_not_drawn_from_the_loader():
    assert _zg2("mask.size(0) != batch_size") == []
