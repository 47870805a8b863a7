"""A forward that collects the parameters of children it skipped and computes with them (issue 20, blind28's tortoise
miss).

`unused.extend(list(self.b.parameters()))` under an optional-input test, then `extra = extra + p.mean()` for each
`p` in `unused` (the DDP idiom that keeps skipped layers in the graph): each `p` is a child's parameter read in the
parent's forward with no hook of the child running (ZG301). The walk of the skipped child is no run of it: ZG205's
message names only the modules the branch runs. Look-alike: the same idiom over the module's own small vector.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

DECODER = """
import torch
from torch import nn


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(512, 512)
        self.b = nn.Sequential(nn.Linear(512, 512), nn.Linear(512, 512))
        self.null = nn.Parameter(torch.zeros(512))

    def forward(self, x, cond=None):
        unused = []
        if cond is None:
            unused.extend({skipped})
        else:
            x = x + self.b(cond)
        extra = 0
        for p in unused:
            extra = extra + p.mean()
        return self.a(x) + extra * 0
"""


def _found(skipped: str) -> list[tuple[str, int, str]]:
    source = textwrap.dedent(DECODER).replace("{skipped}", skipped)
    return [(f.code, f.line, f.message) for f in check_source("decoder.py", source)]


def test_the_parameters_of_a_skipped_child_read_in_forward_are_partitions():
    found = _found("list(self.b.parameters())")
    assert [(code, line) for code, line, _ in found] == [("ZG205", 15), ("ZG301", 21)]
    assert "parameters" not in found[0][2].split("depends on")[0]


def test_the_modules_own_vector_collected_the_same_way_is_its_own():
    assert [(code, line) for code, line, _ in _found("[self.null]")] == [("ZG205", 15)]
