"""Loops over what a function of the file hands back, a length of an argument or a list counted by one
(`analysis/counts.py`, `length_returns`; ZG204): `for begin, end in _ranges(feats, m)` with `_ranges` splitting the
batch by its own size through another helper (`_batch_size(feats)`); against the same helper handed a setting."""

from __future__ import annotations

from package_check import Q_NETS, found_in_package

CACHED = """
import torch
from .nets import QNet


def _batch_size(features):
    return features["ids"].shape[0]


def _ranges(features, mini):
    n = _batch_size(features)
    return [(b, min(b + mini, n)) for b in range(0, n, mini)]


def _fixed(total, mini):
    return [(b, min(b + mini, total)) for b in range(0, total, mini)]


class Cached:
    def __init__(self, d, mini, total):
        self.model = QNet(d, 4)
        self.mini = mini
        self.total = total
        self.bank = torch.zeros(total, d)

    def embed(self, features):
        reps = []
        for begin, end in {ranges}:
            reps.append(self.model({rows}[begin:end]))
        return reps
"""


def test_ranges_a_helper_cuts_from_this_ranks_batch(tmp_path):
    source = CACHED.format(ranges="_ranges(features, self.mini)", rows='features["x"]')
    assert ("ZG204", 28) in found_in_package(tmp_path, {"nets.py": Q_NETS, "cached.py": source}, "cached.py", prefix="ZG2")


def test_ranges_kept_in_a_local_first(tmp_path):
    source = CACHED.format(ranges="spans", rows='features["x"]').replace(
        "        reps = []\n", "        reps = []\n        spans = _ranges(features, self.mini)\n")
    assert ("ZG204", 28) in found_in_package(tmp_path, {"nets.py": Q_NETS, "cached.py": source}, "cached.py", prefix="ZG2")


def test_ranges_of_a_setting_are_clean(tmp_path):
    source = CACHED.format(ranges="_fixed(self.total, self.mini)", rows="self.bank")
    assert found_in_package(tmp_path, {"nets.py": Q_NETS, "cached.py": source}, "cached.py", prefix="ZG2") == []
