"""A loop that ends when this rank's own data iterator runs out (`except StopIteration: break`, an exception class
named for exhausted data) leaves while ranks with data left run the model again (ZG204). Starting the iterator
over (`it = iter(loader)`) keeps every rank in the loop."""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

SOURCE = """
import torch
from torch import nn


class DataExhaustedError(Exception):
    pass


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(1024, 1024)

    def forward(self, x):
        return self.fc(x)


class Trainer:
    def __init__(self):
        self.model = Net()

    def next_batch(self, it):
        try:
            return next(it)
        except StopIteration:
            raise DataExhaustedError()

    def run(self, loader, steps):
        it = iter(loader)
        for step in range(steps):
{body}
            self.model(batch).sum().backward()
"""


def codes(body: str) -> list[str]:
    source = textwrap.dedent(SOURCE).format(body=textwrap.indent(textwrap.dedent(body), " " * 12))
    return sorted(f.code for f in check_source("m.py", source) if f.code.startswith("ZG2"))


@pytest.mark.parametrize("body", [
    """
    try:
        batch = next(it)
    except StopIteration:
        break
    """,
    """
    try:
        batch = self.next_batch(it)
    except DataExhaustedError:
        return
    """,
])
def test_a_loop_left_when_this_ranks_data_runs_out(body):
    assert codes(body) == ["ZG204"]


def test_a_loop_that_starts_its_iterator_over():
    assert codes("""
    try:
        batch = next(it)
    except StopIteration:
        it = iter(loader)
        batch = next(it)
    """) == []
