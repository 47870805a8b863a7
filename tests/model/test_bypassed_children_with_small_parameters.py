"""An adapter-style attention whose only parameter of its own is a small gate, run by its block through
`.forward(...)` alone: no hook of the attention ever fetches the gate, so persistence keeps nothing gathered."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found_in_directory

BLOCK = """
import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.gate = nn.Parameter(torch.zeros(1, heads, 1, 1))

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, -1)
        return torch.softmax(q @ k.transpose(-1, -2), -1) @ v * self.gate.tanh().mean()


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.attention = Attention(dim, heads)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        return x + self.attention.forward(self.norm(x))
"""


def test_a_child_run_only_through_forward_loses_its_small_parameter(tmp_path: Path) -> None:
    call = BLOCK.splitlines().index("        return x + self.attention.forward(self.norm(x))") + 1
    assert ("ZG302", call) in found_in_directory(tmp_path, {"block.py": BLOCK}, "block.py", "ZG302")


def test_a_child_called_as_a_module_elsewhere_keeps_its_small_parameter_gathered(tmp_path: Path) -> None:
    # `self.attention(h)` in `warm` fetched the gate through the attention's own hook; persistence keeps it
    called = BLOCK + """
    def warm(self, h):
        return self.attention(h)
"""
    assert found_in_directory(tmp_path, {"block.py": called}, "block.py", "ZG302") == []
