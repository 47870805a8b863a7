"""Forms of ZG1/ZG3 hazards that `bench/zg1_matrix.py` found missed, each a whole row or column of its
access x holder grid, next to a safe look-alike that must stay clean."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

HEAD = """
import copy
import torch
from torch import nn
"""


def _codes(body: str) -> list[tuple[str, int]]:
    src = textwrap.dedent(HEAD) + textwrap.dedent(body)
    return [(f.code, f.line) for f in check_source("m.py", src, None)]


def test_deepcopy_of_self_in_init_is_checked_without_a_crash() -> None:
    codes = _codes("""
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4096, 4096)
        self.scale = nn.Parameter(torch.empty(4096, 4096))
        twin = copy.deepcopy(self)
""")
    assert all(code != "ZG901" for code, _ in codes)
