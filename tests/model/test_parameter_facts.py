"""What a class's `__init__` registers, read with libcst once its text mentions a parameter: comments and
docstrings no longer count, as they did when the same facts were also read from the text with regexes."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

HEAD = """
import torch
import torch.distributed as dist
from torch import nn
"""


def codes(source: str) -> list[str]:
    return [f.code for f in check_source("m.py", HEAD + textwrap.dedent(source))]


# A module whose own parameters are vectors (so calling it gathers nothing) is called on rank 0 only.
VECTORS = """
class Scale(nn.Module):
    def __init__(self, dim):
        super().__init__()
        {comment}
        self.gamma = nn.Parameter(torch.ones(dim))
        self.beta = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        return x * self.gamma + self.beta


class Net(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.scale = Scale(dim)

    def forward(self, x):
        if dist.get_rank() == 0:
            x = self.scale(x)
        return x
"""


def test_a_module_of_vectors_gathers_nothing_whatever_its_comments_say():
    assert codes(VECTORS.format(comment="pass")) == []
    assert codes(VECTORS.format(comment="# not nn.Parameter(torch.randn(dim, dim)): too large to keep gathered")) == []


def test_a_module_with_a_matrix_parameter_gathers():
    source = VECTORS.format(comment="self.proj = nn.Parameter(torch.randn(dim, dim))")
    assert codes(source) == ["ZG201"]


# A module without parameters whose constructor's docstring mentions one.
PARAMETER_FREE = """
class Gelu(nn.Module):
    def __init__(self):
        \"\"\"Holds no nn.Parameter(...): nothing to gather.\"\"\"
        super().__init__()

    def forward(self, x):
        return torch.nn.functional.gelu(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = Gelu()

    def forward(self, x):
        if dist.get_rank() == 0:
            x = self.act(x)
        return x
"""


def test_a_docstring_mentioning_a_parameter_creates_none():
    assert codes(PARAMETER_FREE) == []


# A child's bias vector, once commented out as a matrix, read in the parent's forward.
COMMENTED = """
class Head(nn.Module):
    def __init__(self, dim):
        super().__init__()
        # self.bias = nn.Parameter(torch.randn(dim, dim))
        self.bias = nn.Parameter(torch.zeros(dim))
        self.proj = nn.Linear(dim, 4096)

    def forward(self, x):
        return self.proj(x) + self.bias


class Net(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.head = Head(dim)

    def forward(self, x):
        return self.head(x) - self.head.bias.mean()
"""


def test_a_commented_out_definition_does_not_decide_a_parameters_size():
    assert "ZG301" not in codes(COMMENTED)
