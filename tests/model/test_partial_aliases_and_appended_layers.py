"""Modules built under other names and into lists, then initialised after construction (ZG103).

* A module-level `partial` of a layer class (`LinearNoBias = partial(Linear, bias=False)`, in the file or imported
  from another) builds that class: `nn.init.zeros_(self.proj.weight)` after `self.proj = LinearNoBias(c, c)` writes a
  parameter that `zero.Init` already partitioned.
* A construction helper that appends layers to a list (`layers.append(nn.Linear(a, b))`) and initialises the one it
  just appended (`nn.init.xavier_normal_(layers[-1].weight)`) writes a partitioned parameter too; the same helper
  leaving initialisation to the model's own `self.apply(init)` (which `zero.Init` gathers for) is clean.
"""

from __future__ import annotations

import textwrap

from package_check import found_in_package
from zgen.model import check_source

PRIM = """
from functools import partial

from torch import nn


class Linear(nn.Linear):
    def __init__(self, in_features, out_features, bias=True, zero_init=False):
        super().__init__(in_features, out_features, bias=bias)
        if zero_init:
            nn.init.zeros_(self.weight)


LinearNoBias = partial(Linear, bias=False)
"""


def test_a_partial_of_a_layer_class_imported_from_another_file_builds_that_layer(tmp_path):
    head = """
        from torch import nn

        from pkg.prim import LinearNoBias


        class Head(nn.Module):
            def __init__(self, c):
                super().__init__()
                self.proj = LinearNoBias(c, c)
                self.gate = LinearNoBias(c, c, zero_init=True)
                nn.init.zeros_(self.proj.weight)

            def forward(self, x):
                return self.proj(x) * self.gate(x)
    """
    assert found_in_package(tmp_path, {"prim.py": PRIM, "head.py": head}, "head.py", prefix="ZG1") == [("ZG103", 12)]


def codes(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("fcn.py", textwrap.dedent(source)) if f.code.startswith("ZG1")]


def test_a_layer_appended_to_a_list_then_initialised_in_the_helper():
    assert codes("""
        import torch
        from torch import nn


        def build_layers(dims, gain):
            layers = []
            for i in range(len(dims) - 1):
                layers.append(nn.Linear(dims[i], dims[i + 1]))
                torch.nn.init.xavier_normal_(layers[-1].weight, gain=gain)
                layers.append(nn.Tanh())
            return layers


        class FCN(nn.Module):
            def __init__(self, dims):
                super().__init__()
                self.seq = nn.Sequential(*build_layers(dims, 1.0))

            def forward(self, x):
                return self.seq(x)
    """) == [("ZG103", 10)]


def test_layers_appended_and_initialised_by_the_models_own_apply_are_clean():
    assert codes("""
        import torch
        from torch import nn


        def build_layers(dims):
            layers = []
            for i in range(len(dims) - 1):
                layers.append(nn.Linear(dims[i], dims[i + 1]))
                layers.append(nn.Tanh())
            return layers


        def _init(m):
            if isinstance(m, nn.Linear):
                torch.nn.init.xavier_normal_(m.weight)


        class FCN(nn.Module):
            def __init__(self, dims):
                super().__init__()
                self.seq = nn.Sequential(*build_layers(dims))
                self.apply(_init)

            def forward(self, x):
                return self.seq(x)
    """) == []
