"""A plain list or tuple attribute the class fills with its submodules (`self.model_pairs = [[self.enc,
self.enc_m], ...]`, the momentum pairs of ALBEF/BLIP/MoCo) yields those submodules when iterated: `for pair in
self.model_pairs: pair[0].parameters()` and `for a, b in self.pairs: a.parameters()` walk submodules' parameters
(`analysis.params.listed_submodules`)."""

from __future__ import annotations

from zgen.model import check_source

from tests.model.package_check import found_in_package

SOURCE = '''
import torch
from torch import nn


class Albef(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.enc = nn.Linear(d, d)
        self.enc_m = nn.Linear(d, d)
        self.momentum = 0.99
        self.model_pairs = [[self.enc, self.enc_m]]
        self.copy_params()

    def copy_params(self):
        for model_pair in self.model_pairs:
            for param, param_m in zip(model_pair[0].parameters(), model_pair[1].parameters()):
                param_m.data.copy_(param.data)

    @torch.no_grad()
    def _momentum_update(self):
        for a, b in self.model_pairs:
            for param, param_m in zip(a.parameters(), b.parameters()):
                param_m.data = param_m.data * self.momentum + param.data * (1.0 - self.momentum)

    def forward(self, x):
        self._momentum_update()
        return self.enc(x)


class Plain(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.enc = nn.Linear(d, d)
        self.enc_m = nn.Linear(d, d)
        self.pairs = [[self.enc, self.enc_m]]
        self.sizes = [self.enc, 3]

    def count(self):
        n = 0
        for a, b in self.pairs:
            for p in a.parameters():
                n += 1
        return n

    def freeze(self):
        for a, b in self.pairs:
            for p in b.parameters():
                p.requires_grad = False
        for m in self.sizes:
            for q in m.parameters():
                q.data.zero_()

    def forward(self, x):
        return self.enc(x)
'''


def _found():
    return {(f.code, f.line) for f in check_source("m.py", SOURCE)}


def test_copy_of_listed_pairs_in_init_is_found():
    assert ("ZG103", 18) in _found()


def test_momentum_update_of_listed_pairs_in_forward_is_found():
    found = _found()
    assert ("ZG101", 24) in found and ("ZG301", 24) in found


def test_listed_pairs_counted_or_frozen_and_mixed_lists_stay_clean():
    # (`self.sizes` holds a number beside a submodule: no list of submodules, so its items are not taken as such)
    assert not [f for f in _found() if f[1] > 28]


BASE = """
import torch
from torch import nn


class MomentumBase(nn.Module):
    def copy_params(self):
        for model_pair in self.model_pairs:
            for param, param_m in zip(model_pair[0].parameters(), model_pair[1].parameters()):
                param_m.data.copy_(param.data)

    def freeze_pairs(self):
        for model_pair in self.model_pairs:
            for param_m in model_pair[1].parameters():
                param_m.requires_grad = False
"""

BLIP = """
import copy
from torch import nn
from .base import MomentumBase


class Blip(MomentumBase):
    def __init__(self, encoder, d):
        super().__init__()
        self.enc = encoder
        self.enc_m = copy.deepcopy(self.enc)
        self.proj = nn.Linear(d, d)
        self.proj_m = nn.Linear(d, d)
        self.model_pairs = [[self.enc, self.enc_m], [self.proj, self.proj_m]]
        self.freeze_pairs()
        self.copy_params()

    def forward(self, x):
        return self.proj(self.enc(x))
"""


def test_base_of_another_file_copying_listed_pairs_is_found_at_the_call(tmp_path):
    # (the base's `freeze_pairs` only sets `requires_grad`: clean)
    assert found_in_package(tmp_path, {"base.py": BASE, "blip.py": BLIP}, "blip.py", prefix="ZG103") == [("ZG103", 16)]
