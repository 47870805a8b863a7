"""A mixin of modules (a class with no base calling `self.modules()`) runs on the module classes of the package that
mix it in: a child they build, used by the mixin's method run on the built model, is theirs (`self.quantizer` of
`class Codec(CodecMixin, nn.Module)` beside it)."""

from __future__ import annotations

from package_check import found_in_package

MIXIN = """
from torch import nn


class CodecMixin:
    def n_convs(self):
        return sum(1 for m in self.modules() if isinstance(m, nn.Conv1d))

    def decompress(self, codes):
        z = self.quantizer.from_codes(codes)
        return self.decoder(z)

    def count(self):
        return self.quantizer.n_codes()

    def decode(self, z):
        return self.decoder(z)
"""

CODEC = """
import torch
from torch import nn
from .base import CodecMixin


class Quantizer(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.codebook = nn.Parameter(torch.randn(n, d))
        self.n = n

    def from_codes(self, codes):
        return self.codebook[codes]

    def n_codes(self):
        return self.n

    def forward(self, x):
        return torch.cdist(x, self.codebook).argmin(-1)


class Codec(CodecMixin, nn.Module):
    def __init__(self, d):
        super().__init__()
        self.quantizer = Quantizer(1024, d)
        self.decoder = nn.Linear(d, d)

    def forward(self, x):
        return self.decoder(x)
"""


def test_mixin_method_calls_heir_child_non_forward(tmp_path):
    got = found_in_package(tmp_path, {"base.py": MIXIN, "codec.py": CODEC}, "base.py", prefix="ZG3")
    assert ("ZG303", 10) in got


def test_mixin_settings_and_calls_are_fine(tmp_path):
    got = found_in_package(tmp_path, {"base.py": MIXIN, "codec.py": CODEC}, "base.py", prefix="ZG3")
    assert [line for _code, line in got if line != 10] == []
