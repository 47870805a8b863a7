"""A branch on the batch size ordered against a setting (`taint._batch_limit_test`, ZG203): `if x.size(0) >
self.max_batch:` around a submodule one side runs, through a local bound to the batch size or a flag computed from the
test; against the same test around a `raise`, a trim of the batch, two sides running the same submodule, and a
sequence extent against a setting (`extent_only`: a decoding step's lockstep test)."""

from __future__ import annotations

from package_check import Q_NETS, found_in_package

MODEL = """
import torch
from torch import nn
from .nets import QNet


class Chunked(nn.Module):
    def __init__(self, d, max_batch):
        super().__init__()
        self.enc = QNet(d, d)
        self.refine = QNet(d, d)
        self.max_batch = max_batch

    def forward(self, x):
{body}
        return self.enc(x)
"""


def _found(tmp_path, body: str) -> list[tuple[str, int]]:
    files = {"nets.py": Q_NETS, "model.py": MODEL.format(body=body)}
    return found_in_package(tmp_path, files, "model.py", prefix="ZG2")


def test_branch_on_the_batch_size_against_a_setting(tmp_path):
    body = """\
        if x.size(0) > self.max_batch:
            x = self.refine(x)"""
    assert ("ZG203", 15) in _found(tmp_path, body)


def test_branch_on_a_local_bound_to_the_batch_size(tmp_path):
    body = """\
        b, t = x.shape[:2]
        if b <= self.max_batch:
            return self.refine(x)"""
    assert ("ZG203", 16) in _found(tmp_path, body)


def test_flag_computed_from_the_batch_size(tmp_path):
    body = """\
        large = x.shape[0] >= self.max_batch
        if large:
            x = self.refine(x)"""
    assert ("ZG203", 16) in _found(tmp_path, body)


def test_batch_limit_that_raises_is_clean(tmp_path):
    body = """\
        if x.size(0) > self.max_batch:
            raise ValueError("batch too large")"""
    assert _found(tmp_path, body) == []


def test_batch_limit_that_trims_is_clean(tmp_path):
    body = """\
        b = x.shape[0]
        if b > self.max_batch:
            x = x[: self.max_batch]"""
    assert _found(tmp_path, body) == []


def test_both_sides_run_the_same_submodule_is_clean(tmp_path):
    body = """\
        if x.size(0) > self.max_batch:
            x = self.refine(x.flatten(1))
        else:
            x = self.refine(x)"""
    assert _found(tmp_path, body) == []


def test_sequence_extent_against_a_setting_is_clean(tmp_path):
    body = """\
        if x.size(1) > self.max_batch:
            x = self.refine(x)"""
    assert _found(tmp_path, body) == []
