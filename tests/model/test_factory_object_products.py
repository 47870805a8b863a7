"""A function builds a plain factory object (`asm = Assembler(d)`, of this file or another) and takes the model one
of its methods builds and returns (`asm.assemble(8)`, also inside `typing.cast(ANI, ...)`, which hands its value
back): the model is built there, partitioned under `zero.Init` once built, so a load into it is ZG108
(`holds.constructed_models`). Against a plain holder's getter handing back a model it was given."""

from __future__ import annotations

from package_check import found_in_package

NETS = """
from torch import nn


class ANI(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        return self.fc(x)
"""

ASSEMBLY = """
from .nets import ANI


class Assembler:
    def __init__(self, d):
        self.d = d

    def assemble(self, n):
        return ANI(self.d * n)
"""

MODELS = """
import typing as tp
import torch
from .nets import ANI
from .assembly import Assembler


def ani1x(d):
    asm = Assembler(d)
    model = tp.cast(ANI, asm.assemble(8))
    model.load_state_dict(torch.load("ani1x.pt"))
    return model


def ani2x(d):
    asm = Assembler(d)
    model = asm.assemble(2)
    model.load_state_dict(torch.load("ani2x.pt"))
    return model


class Holder:
    def __init__(self, model):
        self.model = model

    def get(self):
        return self.model


def reload(model):
    net = Holder(model).get()
    net.load_state_dict(torch.load("x.pt"))
    return net
"""


def test_a_model_a_factory_object_builds_is_loaded_into_after_it_is_built(tmp_path):
    files = {"nets.py": NETS, "assembly.py": ASSEMBLY, "models.py": MODELS}
    found = found_in_package(tmp_path, files, "models.py", prefix="ZG1")
    assert ("ZG108", 11) in found  # through `typing.cast`
    assert ("ZG108", 18) in found


def test_a_getter_handing_back_a_model_it_was_given_builds_nothing(tmp_path):
    files = {"nets.py": NETS, "assembly.py": ASSEMBLY, "models.py": MODELS}
    found = found_in_package(tmp_path, files, "models.py", prefix="ZG1")
    assert [f for f in found if f[1] == 32] == []
