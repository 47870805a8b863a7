"""ZG205: a single layer run on a value computed from an optional input runs only when the input was given.

`if exists(recyclables): x = x + self.norm(recyclables.pair)`, `dist = torch.cdist(coords, coords)` ...
`self.dist_emb(bucketize(dist))`, `h = torch.cat([h, desc])` ... `self.desc_layer(h)`: a rank called without the
input skips the layer's gather, as when the layer runs on the input itself. A value is computed from the input only
when it is on every path to the call (not `h` after `if c: h = f(coords)` / `else: h = self.conv(x)`), and an input
used only as an index (`x[indices]`) picks rows of another value: the layer runs on that value, the caller's
convention.
"""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found_in_package

_HEAD = """
import torch
from torch import nn


def exists(v):
    return v is not None


"""


def _found(tmp_path: Path, source: str) -> list[int]:
    return [line for _, line in found_in_package(tmp_path, {"model.py": _HEAD + source}, "model.py", prefix="ZG205")]


def test_a_layer_on_an_attribute_of_the_optional_input(tmp_path: Path) -> None:
    lines = _found(tmp_path, """
class Fold(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.body = nn.Linear(d, d)
        self.rec = nn.Linear(d, d)

    def forward(self, x, recyclables=None):
        x = self.body(x)
        if exists(recyclables):
            x = x + self.rec(recyclables.pairwise)
        return x
""")
    assert lines == [19]


def test_a_layer_on_locals_computed_from_the_optional_input(tmp_path: Path) -> None:
    lines = _found(tmp_path, """
class Dist(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.body = nn.Linear(d, d)
        self.dist_emb = nn.Embedding(4096, d)

    def forward(self, x, coords=None):
        x = self.body(x)
        if coords is not None:
            dist = torch.cdist(coords, coords)
            buckets = torch.bucketize(dist, torch.linspace(0, 1, 8))
            x = x + self.dist_emb(buckets)
        return x
""")
    assert lines == [19]


def test_a_layer_on_the_state_concatenated_with_the_input_in_a_helper(tmp_path: Path) -> None:
    lines = _found(tmp_path, """
class Desc(nn.Module):
    def __init__(self, d, k):
        super().__init__()
        self.body = nn.Linear(d, d)
        self.desc_layer = nn.Linear(d + k, d + k)

    def add(self, h, descriptors=None):
        if descriptors is not None:
            h = torch.cat([h, descriptors], dim=1)
            h = self.desc_layer(h)
        return h

    def forward(self, x, descriptors=None):
        return self.add(self.body(x), descriptors)
""")
    assert lines == [18]


def test_an_index_or_a_value_computed_on_only_some_paths_is_left_alone(tmp_path: Path) -> None:
    assert _found(tmp_path, """
class Rows(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)
        self.body = nn.Linear(d, d)

    def forward(self, x, indices=None):
        x = self.body(x)
        if indices is not None:
            rows = x[indices]
            x = self.proj(rows)
        return x


class Cached(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.conv = nn.Linear(d, d)
        self.x_proj = nn.Linear(d, d)
        self.fast = nn.Linear(d, d)

    def forward(self, x, state=None, step=0):
        if self.training and state is None:
            return self.fast(x)
        else:
            if state is not None and step > 0:
                h = torch.roll(state, 1) + x
            else:
                h = self.conv(x)
            return self.x_proj(h)
""") == []
