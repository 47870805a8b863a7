"""A base class named through the class it is nested in: `class Network(Builder.BaseNetwork)`.

Network builders nest their module classes inside builder classes and derive from each other's nested
classes. Such a base is a class of this file like any other: when it is an `nn.Module`, so is the class
deriving from it, and its `__init__` is judged under `zero.Init` (a child initialised after it was built is
ZG103). A nested base that is no module leaves its subclass a plain class.
"""

from __future__ import annotations

from zgen.model import check_source

SOURCE = """
import torch
from torch import nn


class Builder:
    class BaseNetwork({root}):
        def __init__(self):
            super().__init__()


class MyBuilder(Builder):
    class Network(Builder.BaseNetwork):
        def __init__(self):
            Builder.BaseNetwork.__init__(self)
            self.fc = nn.Linear(1024, 1024)
            nn.init.orthogonal_(self.fc.weight)

        def forward(self, x):
            return self.fc(x)
"""


def codes(root: str) -> list[str]:
    return sorted(f.code for f in check_source("m.py", SOURCE.format(root=root)) if f.code.startswith("ZG1"))


def test_a_nested_module_base_makes_a_module():
    assert codes("nn.Module") == ["ZG103"]


def test_a_nested_base_that_is_no_module_makes_no_module():
    assert codes("object") == []
