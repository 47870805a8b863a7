"""`parameters(recurse=True)` walks every child (blind10 pykeen models/base.py:296).

The fact: `recurse=True` is the default walk, over the children's parameters too; only `recurse=False` (or a
`recurse=` the code decides) keeps to the module's own. Before, any `recurse=` keyword was read as the module's
own parameters, so `sum(p.numel() for p in self.parameters(recurse=True))` on the built model was missed.

Safe look-alikes: `recurse=False` in forward (the module's own, gathered there), names only.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = textwrap.dedent("""
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.scale = nn.Parameter(torch.ones(d))
            self.enc = nn.Linear(d, d)

        def forward(self, x):
            n = sum(p.numel() for p in self.parameters(recurse=False))
            return self.enc(x) * self.scale / n

        @property
        def num_parameters(self) -> int:
            return sum(param.numel() for param in self.parameters(recurse=True))


    class Trainer:
        def __init__(self, model: Model):
            self.model = model

        def report(self):
            return sum(p.numel() for p in self.model.parameters(recurse=True))

        def names(self):
            return [n for n, _ in self.model.named_parameters(recurse=True)]
""")


def _line(needle: str) -> int:
    return next(i for i, text in enumerate(SOURCE.splitlines(), 1) if needle in text)


def test_recurse_true_walks_the_children() -> None:
    got = {(f.code, f.line) for f in check_source("m.py", SOURCE) if f.code.startswith("ZG1")}
    assert ("ZG102", _line("param.numel() for param in self.parameters(recurse=True)")) in got
    assert ("ZG102", _line("p.numel() for p in self.model.parameters(recurse=True)")) in got


def test_own_walk_in_forward_and_names_stay_clean() -> None:
    got = {f.line for f in check_source("m.py", SOURCE) if f.code.startswith("ZG1")}
    assert not got & {_line("recurse=False"), _line("named_parameters(recurse=True)")}
