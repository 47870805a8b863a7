"""ZG103: a subclass's `__init__` calling a method of a base class in another file that initialises a child the
base's constructor built.

`super().__init__(d, n)` builds `self.fc` (zero.Init partitions it once built); `self.reset_parameters()`, defined by
the base in `base.py`, then writes `self.fc.weight`: the write is lost. The method's own lines are in the other file,
so the finding is at the call. A base method that initialises only the class's own parameters (not partitioned before
`__init__` returns) or only reads a size stays clean.
"""

from __future__ import annotations

from package_check import found_in_package

BASE = """
import torch
import torch.nn as nn


class BaseHead(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        self.fc = nn.Linear(d, n)
        self.scale = nn.Parameter(torch.ones(n))

    def reset_parameters(self):
        nn.init.zeros_(self.fc.weight)

    def reset_scale(self):
        nn.init.ones_(self.scale)

    def out_features(self):
        return self.fc.weight.shape[0]
"""

SUB = """
import torch.nn as nn
from .base import BaseHead


class Head(BaseHead):
    def __init__(self, d, n):
        super().__init__(d, n)
        self.reset_parameters()


class Scaled(BaseHead):
    def __init__(self, d, n):
        super().__init__(d, n)
        self.reset_scale()
"""


def test_a_base_method_of_another_file_initialising_a_built_child(tmp_path):
    found = found_in_package(tmp_path, {"base.py": BASE, "sub.py": SUB}, "sub.py", prefix="ZG103")
    assert ("ZG103", 9) in found


def test_a_base_method_initialising_the_class_own_parameter_is_clean(tmp_path):
    found = found_in_package(tmp_path, {"base.py": BASE, "sub.py": SUB}, "sub.py", prefix="ZG103")
    assert ("ZG103", 15) not in found
