"""A method of a child module that runs its layers (`self.high_level.get_next_skill(obs)`), gated on one side by a
test of this rank's data (`if should_choose.sum() > 0:`), runs on some ranks only: ZG203, as a direct call of the
child would be. Run on both sides of the test, or gated by a setting, it is no finding."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
import torch
from torch import nn


class HighLevel(nn.Module):
    def __init__(self, dim, n):
        super().__init__()
        self.net = nn.Linear(dim, n)

    def get_next_skill(self, obs, mask):
        return self.net(obs).argmax(-1)


class Hierarchy(nn.Module):
    def __init__(self, dim, n):
        super().__init__()
        self.high_level = HighLevel(dim, n)
        self.replan = True

    def choose(self, obs, should_choose, cur):
        if {test}:
            new = self.high_level.get_next_skill(obs, should_choose)
            cur = torch.where(should_choose, new, cur){orelse}
        return cur
"""


def zg2(test: str, orelse: str = "") -> list[tuple[str, int]]:
    found = check_source("m.py", textwrap.dedent(SOURCE.format(test=test, orelse=orelse)))
    return [(f.code, f.line) for f in found if f.code.startswith("ZG2")]


def test_a_childs_method_gated_by_this_ranks_data():
    assert zg2("should_choose.sum() > 0") == [("ZG203", 22)]
    assert zg2("should_choose.any()") == [("ZG203", 22)]


def test_the_same_method_on_the_other_side_is_no_finding():
    orelse = "\n        else:\n            cur = self.high_level.get_next_skill(obs, should_choose)"
    assert zg2("should_choose.sum() > 0", orelse) == []


def test_a_setting_gating_the_method_is_no_finding():
    assert zg2("self.replan") == []
