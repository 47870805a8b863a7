"""ZG205: the blocks a loop takes out of a container of submodules, gated on an optional input.

`for attn, cross_attn, ff in self.layers: ... if exists(cross_attn) and exists(context): x = cross_attn(x, context)`:
the loop variables are the model's own blocks (whether a block has a cross-attention is fixed when it was built, like
`self.cross is not None`), so the optional context alone decides whether each block's cross-attention runs.
"""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found_in_package

_HEAD = """
from torch import nn


def exists(v):
    return v is not None


class CrossAttention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.to_q = nn.Linear(d, d)
        self.to_kv = nn.Linear(d, 2 * d)

    def forward(self, x, context=None):
        k, v = self.to_kv(context if exists(context) else x).chunk(2, -1)
        return self.to_q(x) + k + v


"""


def _found(tmp_path: Path, source: str) -> list[int]:
    return [line for _, line in found_in_package(tmp_path, {"model.py": _HEAD + source}, "model.py", prefix="ZG205")]


def test_a_block_s_cross_attention_run_only_with_a_context(tmp_path: Path) -> None:
    lines = _found(tmp_path, """
class Decoder(nn.Module):
    def __init__(self, d, depth, cross_layers=None):
        super().__init__()
        self.layers = nn.ModuleList([])
        for i in range(depth):
            self.layers.append(nn.ModuleList([
                nn.Linear(d, d),
                CrossAttention(d) if cross_layers is None or i in cross_layers else None,
                nn.Linear(d, d),
            ]))

    def forward(self, x, context=None):
        for attn, cross_attn, ff in self.layers:
            x = attn(x)
            if exists(cross_attn) and exists(context):
                x = cross_attn(x, context)
            x = ff(x)
        return x
""")
    assert lines == [35]


def test_each_block_run_only_with_a_context(tmp_path: Path) -> None:
    lines = _found(tmp_path, """
class Stack(nn.Module):
    def __init__(self, d, depth):
        super().__init__()
        self.blocks = nn.ModuleList([CrossAttention(d) for _ in range(depth)])
        self.out = nn.Linear(d, d)

    def forward(self, x, context=None):
        for i, block in enumerate(self.blocks):
            if context is not None:
                x = block(x, context)
        return self.out(x)
""")
    assert lines == [29]


def test_blocks_chosen_by_structure_or_run_either_way_are_left_alone(tmp_path: Path) -> None:
    assert _found(tmp_path, """
class Structure(nn.Module):
    def __init__(self, d, depth):
        super().__init__()
        self.layers = nn.ModuleList(
            [nn.ModuleList([nn.Linear(d, d), CrossAttention(d) if i % 2 else None]) for i in range(depth)]
        )

    def forward(self, x, context=None):
        for attn, cross_attn in self.layers:
            x = attn(x)
            if exists(cross_attn):
                x = cross_attn(x, context)
        return x


class BothWays(nn.Module):
    def __init__(self, d, depth):
        super().__init__()
        self.layers = nn.ModuleList([nn.ModuleList([nn.Linear(d, d), CrossAttention(d)]) for i in range(depth)])

    def forward(self, x, context=None):
        for attn, cross_attn in self.layers:
            x = attn(x)
            if exists(context):
                x = cross_attn(x, context)
            else:
                x = cross_attn(x, x)
        return x
""") == []
