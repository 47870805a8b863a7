"""A method the module's forward runs (`forward_on_codes`, `embed`), called on `self` from a method run on the
built model outside any forward (`generate`, `sample`), runs that part of the forward with no hook of the module:
the parameters it reads of the module's own are placeholders there, small ones too, since nothing fetched them
(ZG302, `zg302._forward_parts`). A part that only runs children (their hooks gather them) or reads no parameter
is fine."""

from __future__ import annotations

from package_check import found_in_package

HAZARDS = """
import torch
from torch import nn


class Gen(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.sos = nn.Parameter(torch.randn(d))
        self.emb = nn.Embedding(n, d)
        self.out = nn.Linear(d, n)

    def forward_on_codes(self, codes):
        h = self.emb(codes)
        return self.out(torch.cat((self.sos.expand(h.shape[0], 1, -1), h), 1))

    def forward(self, codes):
        return self.forward_on_codes(codes)

    @torch.no_grad()
    def generate(self, codes, steps):
        for _ in range(steps):
            logits = self.forward_on_codes(codes)
            codes = torch.cat((codes, logits[:, -1:].argmax(-1)), 1)
        return codes
"""

LOOK_ALIKES = """
import torch
from torch import nn


class Children(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.emb = nn.Embedding(n, d)
        self.out = nn.Linear(d, n)

    def body(self, ids):
        return self.out(self.emb(ids))

    def forward(self, ids):
        return self.body(ids)

    def generate(self, ids):
        return self.body(ids).argmax(-1)


class Through(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(d))
        self.out = nn.Linear(d, n)

    def post(self, h):
        return h.softmax(-1)

    def forward(self, h):
        return self.post(self.out(h * self.scale))

    def generate(self, h):
        return self.post(self(h))
"""


def test_a_part_of_forward_run_from_generate_skips_the_module_s_hooks(tmp_path):
    assert found_in_package(tmp_path, {"model.py": HAZARDS}, "model.py", prefix="ZG3") == [("ZG302", 23)]


def test_parts_running_children_or_reading_nothing_stay_clean(tmp_path):
    assert found_in_package(tmp_path, {"model.py": LOOK_ALIKES}, "model.py", prefix="ZG3") == []
