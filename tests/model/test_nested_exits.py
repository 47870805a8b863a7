"""A `return` inside a nested function leaves that function, not the one around it.

An argument validator defined in a script (`def valid_model_name(name): if ...: return name; raise ...`) decides
nothing about the model calls the script makes after it. A `return` on this rank's data inside a closure that runs
a layer (`def run(x): if x.numel() == 0: return x; return self.layer(x)`) still skips that layer's call (ZG204).
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
import os
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(4096, 4096)

    def forward(self, x):
        def run(h):
            if h.numel() == 0:
                return h
            return self.layer(h)
        return run(x)


def cli(paths, names):
    def valid_model_name(name):
        if name in names or os.path.exists(name):
            return name
        raise ValueError("bad")

    model = Net()
    for path in paths:
        model(torch.load(path))
"""


def test_a_return_in_a_nested_function_skips_only_that_functions_calls() -> None:
    found = [(f.code, f.line) for f in check_source("model.py", textwrap.dedent(SOURCE)) if f.code.startswith("ZG2")]
    assert found == [("ZG204", 14)]
