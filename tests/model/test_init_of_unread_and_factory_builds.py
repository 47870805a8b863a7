"""Children an `__init__` builds through a call zgen could not classify, then initialises.

A function of another file named like a class, `SNLinear(d, 1)` of `def SNLinear(*a): return
spectral_norm(nn.Linear(*a))`, builds what it returns (`members._classify_call`), so `nn.init.xavier_uniform_(
self.l5.weight.data)` after it writes a partitioned child. A member built by a class no file we read defines
(`self.blk = Block(d)` of a library not installed) holds built layers when a helper takes an attribute of it as a
module, `init_zero_(self.blk.attn.to_out)` (`params._of_unread_class`). Look-alikes: a factory of another file
returning a plain tensor; a helper that reads a layer's setting of such a member; the class's own new parameter."""

from __future__ import annotations

from tests.model.package_check import found_in_package

LAYERS = """
    import torch
    from torch import nn


    def SNLinear(*args, **kwargs):
        return nn.utils.spectral_norm(nn.Linear(*args, **kwargs))


    def Table(n, d):
        return torch.zeros(n, d)
"""

DISC = """
    import torch.nn as nn
    from .layers import SNLinear, Table


    class Disc(nn.Module):
        def __init__(self, n, d):
            super().__init__()
            self.l5 = SNLinear(d, 1)
            self.tab = Table(n, d)
            nn.init.xavier_uniform_(self.l5.weight.data, 1.0)
            nn.init.xavier_uniform_(self.tab.data, 1.0)

        def forward(self, x, y):
            return self.l5(x) + self.tab[y].sum()
"""

NET = """
    import torch
    from torch import nn
    from extlib import Block


    def init_zero_(layer):
        nn.init.constant_(layer.weight, 0.)


    def fan_out(layer):
        return layer.out_features


    class Net(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.inp = nn.Linear(d, d)
            self.blk = Block(dim=d)
            init_zero_(self.blk.attn.to_out)
            self.k = fan_out(self.blk.attn.to_out)
            self.w = nn.Parameter(torch.empty(d))
            nn.init.zeros_(self.w)

        def forward(self, x):
            return self.blk(self.inp(x)) * self.w
"""


def test_child_built_by_a_factory_named_like_a_class_then_initialised(tmp_path):
    assert found_in_package(tmp_path, {"layers.py": LAYERS, "disc.py": DISC}, "disc.py", prefix="ZG1") == [
        ("ZG103", 11)]


def test_attribute_of_an_unread_library_block_handed_to_an_initialiser(tmp_path):
    assert found_in_package(tmp_path, {"net.py": NET}, "net.py", prefix="ZG1") == [("ZG103", 20)]
