"""A ModuleDict entry reached by attribute and iterated is a list of the dict's modules (h-init, olmo's `for block in
self.transformer.blocks: block.reset_parameters()` in `__init__`; `calls.ModuleCalls._elements_of`): the items are
modules of the classes the dict holds, so a method of theirs that initialises their parameters, run from the parent's
`__init__`, writes partitioned placeholders (ZG103). Look-alikes: the same loop setting a Python attribute or calling
a method that touches no parameter."""

from __future__ import annotations

from package_check import found_in_package

MODEL = """\
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.att = nn.Linear(d, 3 * d)

    def reset_parameters(self):
        nn.init.normal_(self.att.weight, std=0.02)

    def forward(self, x):
        return self.att(x)


class Nested(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(blocks=nn.ModuleList([Block(d) for _ in range(n)]), ln=nn.LayerNorm(d)))
        for block in self.transformer.blocks:
            block.reset_parameters()  # 21 hazard

    def forward(self, x):
        for b in self.transformer.blocks:
            x = b(x)
        return self.transformer.ln(x)


class Tagged(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(blocks=nn.ModuleList([Block(d) for _ in range(n)]), ln=nn.LayerNorm(d)))
        for i, block in enumerate(self.transformer.blocks):
            block.layer_id = i  # 34 attribute
            block.train(False)  # 35 no parameter

    def forward(self, x):
        for b in self.transformer.blocks:
            x = b(x)
        return self.transformer.ln(x)
"""


def test_items_of_an_iterated_module_dict_entry_reset_in_init(tmp_path):
    assert ("ZG103", 21) in found_in_package(tmp_path, {"model.py": MODEL}, "model.py", prefix="ZG1")


def test_loop_touching_no_parameter_stays_clean(tmp_path):
    got = found_in_package(tmp_path, {"model.py": MODEL}, "model.py", prefix="ZG1")
    assert not [line for _code, line in got if line in (34, 35)]
