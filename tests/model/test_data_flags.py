"""A flag another method sets under a test of this rank's data's values (`taint.own_state`, ZG203): `if
torch.norm(a - b.flip(1)) == 0: self.is_mirror = True` in a check the forward calls, then `if self.is_mirror:` skipping
a submodule run; the function form of a reduction tests the values as its method form does (`torch.sum(mask) > 0`,
`taint._compared_reduction`). Against a flag set under a test of an extent (`x.size(1) > self.cached`), a flag that
only changes how a value is computed, and a test on the module's own state."""

from __future__ import annotations

from package_check import Q_NETS, found_in_package

MODEL = """
import torch
from torch import nn
from .nets import QNet


class Mirror(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.flow = QNet(d, d)
        self.flag = False
        self.cached = 16

    def check(self, x):
        if {test}:
            self.flag = True

    def forward(self, x):
        self.check(x)
        back = self.flow(x)
        if self.flag:
            {flagged}
        else:
            fwd = self.flow(x.flip(1))
        return back + fwd
"""


def _found(tmp_path, test: str, flagged: str = "fwd = back.flip(1)") -> list[tuple[str, int]]:
    files = {"nets.py": Q_NETS, "model.py": MODEL.format(test=test, flagged=flagged)}
    return found_in_package(tmp_path, files, "model.py", prefix="ZG2")


def test_flag_set_under_a_test_of_the_input_values_skips_a_run(tmp_path):
    assert ("ZG203", 21) in _found(tmp_path, "torch.norm(x - x.flip(1)) == 0")


def test_flag_set_under_a_method_form_reduction(tmp_path):
    assert ("ZG203", 21) in _found(tmp_path, "(x - x.flip(1)).abs().sum() == 0")


def test_flag_set_under_an_extent_test_is_clean(tmp_path):
    assert _found(tmp_path, "x.size(1) > self.cached") == []


def test_flag_whose_sides_run_the_same_submodule_is_clean(tmp_path):
    assert _found(tmp_path, "torch.norm(x - x.flip(1)) == 0", "fwd = self.flow(x.flip(1)) * 2") == []


def test_flag_set_under_a_test_of_the_module_state_is_clean(tmp_path):
    assert _found(tmp_path, "self.cached > 8") == []


GATED = """
import torch
from torch import nn
from .nets import QNet


class Gated(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.enc = QNet(d, d)
        self.extra = QNet(d, d)

    def forward(self, x, mask):
        h = self.enc(x)
        if {test}:
            h = self.extra(h)
        return h
"""


def test_function_form_reduction_of_the_input_gates_a_submodule(tmp_path):
    files = {"nets.py": Q_NETS, "model.py": GATED.format(test="torch.sum(mask) > 0")}
    assert ("ZG203", 15) in found_in_package(tmp_path, files, "model.py", prefix="ZG2")


def test_function_form_reduction_of_a_parameter_is_clean(tmp_path):
    files = {"nets.py": Q_NETS, "model.py": GATED.format(test="torch.sum(self.enc.l1.weight) > 0")}
    assert found_in_package(tmp_path, files, "model.py", prefix="ZG2") == []
