"""ZG301 on a tensor of a `ParameterDict`/`ParameterList` child taken into a local that other branches bind to other
values (blind14's robomimic: `e = self.params["emb"]` in one branch, `e = self.nets["emb"](t)` in the other): the
uses of the local do not say which value they read, so the tensor is judged where it is taken; a local bound only
to the tensor is still judged where it is used (`w.shape` alone is no read)."""

from __future__ import annotations

from zgen.model import check_source

SOURCE = """
import torch
from torch import nn


class Timed(nn.Module):
    def __init__(self, d, steps, learned):
        super().__init__()
        self.learned = learned
        self.params = nn.ParameterDict()
        self.nets = nn.ModuleDict()
        if learned:
            self.params["emb"] = nn.Parameter(torch.zeros(1, steps, d))
        else:
            self.nets["emb"] = nn.Embedding(steps, d)

    def forward(self, x, t):
        if self.learned:
            e = self.params["emb"]  # hazard
        else:
            e = self.nets["emb"](t)
            e = torch.cat([e, e], -1)  # safe
        return x + e


class Sized(nn.Module):
    def __init__(self, d, steps):
        super().__init__()
        self.params = nn.ParameterDict()
        self.params["emb"] = nn.Parameter(torch.zeros(1, steps, d))
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        w = self.params["emb"]  # safe
        return self.fc(x)[:, : w.shape[1]]
"""


def _lines(mark: str) -> list[int]:
    return [i for i, line in enumerate(SOURCE.split("\n"), 1) if line.endswith(f"# {mark}")]


def test_a_container_tensor_in_a_local_bound_to_other_values_is_read_where_it_is_taken():
    found = sorted({f.line for f in check_source("timed.py", SOURCE) if f.code == "ZG301"})
    assert found == _lines("hazard")
