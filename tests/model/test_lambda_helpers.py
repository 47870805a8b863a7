"""A lambda bound to a local is a helper like a nested `def`: what it does to the module it is handed counts.

`npa = lambda m: sum(p.numel() for p in m.parameters())`, called on each child in a summary `__init__` prints,
counts placeholders of size 0 (ZG102), as the same helper written with `def` does. A lambda reading only a
module's dtype, and one counting the elements of a tensor the method makes, are no such reads.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SUMMARY = """
import torch
from torch import nn


class Enhancer(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(1024, 1024)
        self.head = nn.Linear(1024, 1024)
        print(self.summarize())

    def summarize(self):
        npa = lambda m: sum(p.numel() for p in m.parameters())
        return [(name, npa(module)) for name, module in self.named_children()]

    def forward(self, x):
        return self.head(self.body(x))
"""

LOOK_ALIKES = """
import torch
from torch import nn


class Enhancer(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(1024, 1024)
        print(self.describe())

    def describe(self):
        kind = lambda m: next(m.parameters()).dtype
        size = lambda t: t.numel()
        probe = torch.zeros(8, 8)
        return kind(self.body), size(probe)

    def forward(self, x):
        return self.body(x)
"""


def _found(source: str) -> list[tuple[str, int]]:
    found = check_source("model.py", textwrap.dedent(source))
    return sorted((f.code, f.line) for f in found if f.code.startswith("ZG1"))


def test_a_lambda_counting_the_parameters_of_each_child_is_found():
    assert ("ZG102", 15) in _found(SUMMARY)


def test_a_lambda_reading_a_dtype_or_counting_a_plain_tensor_is_not():
    assert _found(LOOK_ALIKES) == []
