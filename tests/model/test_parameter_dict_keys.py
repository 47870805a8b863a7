"""Iterating a `ParameterDict` child yields its keys, strings, not its tensors (`for k in self.prior_params`): only
`self.prior_params[k]`, `.values()` and `.items()` read the tensors no hook gathers (ZG301); a `ParameterList`
iterated yields its tensors."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = textwrap.dedent("""
    import torch
    from torch import nn


    class Prior(nn.Module):
        def __init__(self, names, d):
            super().__init__()
            self.prior_params = nn.ParameterDict({k: nn.Parameter(torch.zeros(d, d)) for k in names})
            self.lin = nn.Linear(d, d)

        def forward(self, n):
            out = {}
            for k in self.prior_params:
                out[k] = self.prior_params[k].expand(n, -1, -1)
            names = [k for k in self.prior_params]
            return out, names


    class Stack(nn.Module):
        def __init__(self, n, d):
            super().__init__()
            self.ws = nn.ParameterList([nn.Parameter(torch.randn(d, d)) for _ in range(n)])

        def forward(self, x):
            for w in self.ws:
                x = x @ w
            return x
""")


def _found():
    return sorted((f.code, f.line, f.column) for f in check_source("m.py", SOURCE) if f.code.startswith("ZG3"))


def test_tensors_of_the_dict_and_the_list_are_read():
    lines = {(code, line) for code, line, _col in _found()}
    assert ("ZG301", 15) in lines  # self.prior_params[k]
    assert ("ZG301", 27) in lines  # w of the ParameterList


def test_keys_of_the_dict_are_no_parameters():
    # only the subscript of line 15 (column 22); not `k` of `out[k]`, of the subscript, nor of the comprehension
    assert [(line, col) for _code, line, col in _found() if line in (14, 15, 16)] == [(15, 22)]
