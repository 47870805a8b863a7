"""A `ParameterList`/`ParameterDict` handed whole to a call in the forward (tenth session, h-zg3r).

The container is a child module nobody calls, so no hook gathers its tensors; a call given the container whole
(`torch.stack(list(self.ws))`, `run(x, self.ws)`, `[*self.ws]`, `sum(self.pd.values())`) computes with every one
of them, like `self.ws[0]` or a loop over it, small or not. Its size (`len`) and a loop judged at its items are
not reads."""

from __future__ import annotations

import textwrap

from package_check import found


def _found(tmp_path, text: str) -> list[tuple[str, int]]:
    path = tmp_path / "model.py"
    path.write_text(textwrap.dedent(text))
    return found(path)


WHOLE = """
import torch
from torch import nn

def apply(x, ws):
    for w in ws:
        x = x @ w
    return x

class Net(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        self.ws = nn.ParameterList([nn.Parameter(torch.randn(d, d)) for _ in range(n)])
        self.pd = nn.ParameterDict({"a": nn.Parameter(torch.randn(d, d))})

    def forward(self, x):
        a = x @ torch.stack(list(self.ws)).sum(0)
        b = apply(x, self.ws)
        c = x @ torch.stack([*self.ws]).sum(0)
        d = x @ sum(self.pd.values())
        return a + b + c + d
"""


def test_a_parameter_container_handed_whole_to_a_call_is_read(tmp_path):
    found = _found(tmp_path, WHOLE)
    assert {("ZG301", 17), ("ZG301", 18), ("ZG301", 19), ("ZG301", 20)} <= set(found)


WHOLE_SAFE = """
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        self.gains = nn.ParameterList([nn.Parameter(torch.ones(d)) for _ in range(n)])
        self.lin = nn.Linear(d, d)

    def forward(self, x):
        g = torch.stack(list(self.gains)).prod(0)
        return self.lin(x) * g * len(self.gains)
"""


def test_a_container_of_vectors_handed_whole_is_read_but_its_length_is_not(tmp_path):
    assert _found(tmp_path, WHOLE_SAFE) == [("ZG301", 12)]
