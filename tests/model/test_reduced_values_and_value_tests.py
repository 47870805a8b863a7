"""A module's method that decides on one value reduced from this rank's tensor runs its submodules on some ranks
only (ZG203), also where the decision is spelled in two steps: the reduction bound to a local first (`n =
(targets > 0).sum()` ... `if n > 0:`), or made by another method of the class that answers with a test of the values
it was handed (`return torch.norm(a - b.flip(1)) == 0`) or with a selection they make (`return torch.nonzero(m)`).
A reduction of the module's own parameters, or a helper's reduced value used as a number, decides nothing per rank.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

HEADER = """
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.gate = nn.Parameter(torch.ones(8))
"""


def zg2(methods: str) -> list[tuple[str, int]]:
    source = textwrap.dedent(HEADER) + textwrap.indent(textwrap.dedent(methods), "    ")
    return [(f.code, f.line) for f in check_source("m.py", source) if f.code.startswith("ZG2")]


def test_a_reduction_bound_to_a_local_then_tested_gates_a_submodule():
    assert zg2("""
        def forward(self, x, targets):
            num_pos = (targets > 0).sum()
            if num_pos > 0:
                x = self.fc(x)
            return x
    """) == [("ZG203", 14)]


def test_a_mask_then_its_count_then_the_test():
    assert zg2("""
        def forward(self, x, targets):
            positive = targets > 0
            count = positive.sum()
            if count > 0:
                x = self.fc(x[positive])
            return x
    """) == [("ZG203", 15)]


def test_a_method_answering_with_a_test_of_the_values_it_was_handed():
    assert zg2("""
        def is_mirrored(self, frames):
            first, second = torch.chunk(frames, 2, dim=1)
            return torch.norm(first - second.flip(1)) == 0

        def forward(self, frames):
            out = self.fc(frames)
            if not self.is_mirrored(frames):
                out = out + self.fc(frames.flip(1))
            return out
    """) == [("ZG203", 18)]


def test_a_method_answering_with_a_selection_the_values_make():
    assert zg2("""
        def decode(self, heatmap):
            return torch.nonzero(heatmap > 0.5)

        def forward(self, x, heatmap):
            coords = self.decode(heatmap)
            if len(coords) > 0:
                x = self.fc(x)
            return x
    """) == [("ZG203", 17)]


def test_a_reduction_of_the_modules_own_parameter_is_the_same_on_every_rank():
    assert zg2("""
        def forward(self, x):
            total = self.gate.sum()
            if total > 0:
                x = self.fc(x)
            return x
    """) == []


def test_a_method_testing_its_own_parameter_is_the_same_on_every_rank():
    assert zg2("""
        def active(self, x):
            return self.gate.abs().sum() > 0

        def forward(self, x):
            if self.active(x):
                x = self.fc(x)
            return x
    """) == []


def test_a_helpers_reduced_value_used_as_a_number_decides_nothing():
    assert zg2("""
        def energy(self, x):
            return x.pow(2).mean()

        def forward(self, x):
            scale = self.energy(x)
            return self.fc(x) * scale
    """) == []


def test_a_reduction_along_a_dimension_is_a_tensor_not_one_value():
    assert zg2("""
        def forward(self, x, weights):
            per_row = weights.sum(-1)
            if per_row.dim() == 1:
                x = self.fc(x)
            return x * per_row.unsqueeze(-1)
    """) == []


def test_a_function_of_the_file_answering_with_a_test_of_its_values():
    source = textwrap.dedent(HEADER) + textwrap.dedent("""
        def has_positives(t):
            return t.sum() > 0


        class Head(Block):
            def forward(self, x, targets):
                if has_positives(targets):
                    x = self.fc(x)
                return x
    """)
    assert [(f.code, f.line) for f in check_source("m.py", source) if f.code.startswith("ZG2")] == [("ZG203", 18)]


def test_a_recursive_function_answering_with_a_test_is_read_once():
    source = textwrap.dedent(HEADER) + textwrap.dedent("""
        def settle(t, depth):
            halved = depth > 0 and settle(t, depth - 1)
            return halved or t.sum() > 0


        class Head(Block):
            def forward(self, x, targets):
                if settle(targets, 3):
                    x = self.fc(x)
                return x
    """)
    assert [(f.code, f.line) for f in check_source("m.py", source) if f.code.startswith("ZG2")] == [("ZG203", 19)]
