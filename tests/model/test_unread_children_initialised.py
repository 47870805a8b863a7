"""A child built from a package zgen cannot read, initialised after it was built (ZG103).

`self.to_cond = MLP(d, 2 * d, d)` of `from x_mlps_pytorch import MLP` (not installed): zgen cannot tell what the
class holds, so the member is no module it knows. Handing its `weight` or `bias` (or those of an item of a container
it holds, also through a local: `last = self.to_cond.layers[-1]`) to an in-place initialiser says it is one: the
write lands on a placeholder under `zero.Init`. Settings of such an object (`self.criterion.weight = w`, an
assignment) and a constructor argument asking the class to initialise itself stay clean.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source


def codes(body: str) -> list[tuple[str, int]]:
    source = textwrap.dedent("""
        import torch
        from torch import nn
        from x_mlps_pytorch import MLP
        from focal import FocalLoss


        class Policy(nn.Module):
            def __init__(self, d):
                super().__init__()
    """) + textwrap.indent(textwrap.dedent(body), " " * 8) + textwrap.dedent("""

            def forward(self, x):
                return self.to_cond(x)
    """)
    return [(f.code, f.line) for f in check_source("policy.py", source) if f.code.startswith("ZG1")]


def test_an_unread_child_and_an_item_of_it_initialised_after_construction():
    assert codes("""
        self.to_cond = MLP(d, 2 * d, d)
        last = self.to_cond.layers[-1]
        nn.init.zeros_(last.weight)
        self.gate = MLP(d, 1)
        nn.init.zeros_(self.gate.bias)
    """) == [("ZG103", 14), ("ZG103", 16)]


def test_settings_of_an_unread_object_and_self_initialising_children_are_clean():
    assert codes("""
        self.to_cond = MLP(d, 2 * d, d, zero_init_last=True)
        self.criterion = FocalLoss(gamma=2.0)
        self.criterion.weight = torch.ones(3)
    """) == []


def test_an_unread_child_written_in_place_through_data():
    assert codes("""
        self.to_cond = MLP(d, 2 * d, d)
        self.to_cond.weight.data.zero_()
        self.to_cond.scale = 2.0
    """) == [("ZG103", 13)]
