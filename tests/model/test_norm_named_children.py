"""A child of a `Sequential` a helper builds (a conv and a batch norm, `conv_bn(...)`), read by name in forward: the
norm's weight holds one value per channel and stays gathered, the conv's kernel does not."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found

CONV_BN = '''
from torch import nn


def conv_bn(cin, cout, k):
    result = nn.Sequential()
    result.add_module("conv", nn.Conv2d(cin, cout, k, padding=k // 2, bias=False))
    result.add_module("bn", nn.BatchNorm2d(cout))
    return result


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = conv_bn(c, c, 3)

    def forward(self, x):
        out = self.dense(x)
        scale = (self.dense.bn.weight / (self.dense.bn.running_var + self.dense.bn.eps).sqrt()).detach()
        penalty = (self.dense.conv.weight ** 2).sum()
        return out * scale.view(1, -1, 1, 1), penalty
'''


def test_a_norm_named_child_of_a_built_sequential_stays_gathered(tmp_path: Path) -> None:
    path = tmp_path / "block.py"
    path.write_text(CONV_BN)
    assert found(path, "ZG301") == [("ZG301", 20)]
