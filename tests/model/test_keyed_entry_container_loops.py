"""A loop over a container an entry of a `self` container holds (`for name, layer in
self.nets["decoder"].nets.items()`, `.values()`), in `__init__` after a base class of another file built it,
walks built modules: initialising `layer.weight` writes a partitioned child (ZG103, `params._container_items`).
Look-alikes: the same loop keeping the names or reading a layer's setting."""

from __future__ import annotations

from tests.model.package_check import found_in_package

BASE = """
    from torch import nn


    class MLP(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.nets = nn.ModuleDict({"a": nn.Linear(d, d), "b": nn.Linear(d, d)})

        def forward(self, x):
            return self.nets["b"](self.nets["a"](x))


    class Actor(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.nets = nn.ModuleDict()
            self.nets["decoder"] = MLP(d)

        def forward(self, x):
            return self.nets["decoder"](x)
"""

ACTOR = """
    import torch
    from .base import Actor


    class Gaussian(Actor):
        def __init__(self, d, w):
            super().__init__(d)
            with torch.no_grad():
                for name, layer in self.nets["decoder"].nets.items():
                    torch.nn.init.uniform_(layer.weight, -w, w)


    class Named(Actor):
        def __init__(self, d):
            super().__init__(d)
            self.names = []
            self.sizes = []
            for name, layer in self.nets["decoder"].nets.items():
                self.names.append(name)
                self.sizes.append(layer.out_features)
"""


def test_layers_of_a_keyed_entry_initialised_after_the_base_built_them(tmp_path):
    assert found_in_package(tmp_path, {"base.py": BASE, "actor.py": ACTOR}, "actor.py", prefix="ZG1") == [
        ("ZG103", 11)]
