"""ZG101/ZG109 in a module's own methods on a child reached through what a call hands back (h-ft, adapters merged
into the layer they wrap): a getter of the class (`self.get_base_layer()` with `return self.base_layer`, in a base
class of another file too), a `@property` returning the child (`self.wrapped`), a function of the file walking down
wrappers (`while hasattr(m, "base_layer"): m = m.base_layer`; `return m`) handed `self`, and a local bound to a
child's parameter then written (`w = self.base_layer.weight`; `w.data.add_(d)`), `analysis.returned` and
`analysis.params`. Beside each, its look-alike: the same reach inside `GatheredParameters`, for metadata only, or
on a layer the method built itself."""

from __future__ import annotations

from package_check import found_in_package

BASE = """
import torch
from torch import nn


class Wrapper(nn.Module):
    def __init__(self, d_in, d_out, r=8):
        super().__init__()
        self.base_layer = nn.Linear(d_in, d_out)
        self.down = nn.Linear(d_in, r, bias=False)
        self.up = nn.Linear(r, d_out, bias=False)

    def get_base_layer(self):
        return self.base_layer

    @property
    def wrapped(self):
        return self.base_layer

    def forward(self, x):
        return self.base_layer(x) + self.up(self.down(x))
"""

LORA = """
import deepspeed
import torch
from torch import nn

from .base import Wrapper


def innermost(m):
    while hasattr(m, "base_layer"):
        m = m.base_layer
    return m


class Lora(Wrapper):
    def merge(self, delta):
        self.get_base_layer().weight.data += delta                  # 17: getter of the base class

    def unmerge(self, delta):
        self.wrapped.weight.data -= delta                           # 20: property

    def fold(self, delta):
        innermost(self).weight.data.add_(delta)                     # 23: walked down by a function

    def scale(self, s):
        w = self.base_layer.weight
        w.data.mul_(s)                                              # 27: through a local

    def merged(self):
        return self.get_base_layer().weight + self.up.weight @ self.down.weight   # 30: read

    def merge_gathered(self, delta):
        base = self.get_base_layer()
        with deepspeed.zero.GatheredParameters([base.weight], modifier_rank=0):
            self.get_base_layer().weight.data += delta
            w = self.wrapped.weight
            w.data.add_(delta)

    def describe(self):
        return self.get_base_layer().weight.dtype, self.wrapped.weight.device

    def rebuilt(self, d):
        lin = nn.Linear(d, d)
        w = lin.weight
        w.data.zero_()
        return lin
"""


def test_children_handed_back_are_written_where_their_parameters_are_partitioned(tmp_path):
    found = found_in_package(tmp_path, {"base.py": BASE, "lora.py": LORA}, "lora.py", prefix="ZG1")
    assert ("ZG101", 17) in found
    assert ("ZG101", 20) in found
    assert ("ZG101", 23) in found
    assert ("ZG101", 27) in found
    assert ("ZG109", 30) in found


def test_gathered_metadata_and_rebuilt_lookalikes_stay_clean(tmp_path):
    found = found_in_package(tmp_path, {"base.py": BASE, "lora.py": LORA}, "lora.py", prefix="ZG1")
    assert [f for f in found if f[1] >= 32] == []


LM = """
from torch import nn


class LM(nn.Module):
    def __init__(self, vocab=32000, d=1024):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.out = nn.Linear(d, vocab)

    def get_input_embeddings(self):
        return self.tok

    def forward(self, ids):
        return self.out(self.tok(ids))
"""

RESIZE = """
import deepspeed
from torch import nn


def resize(model, n):
    old = model.get_input_embeddings()
    new = nn.Embedding(n, 1024)
    new.weight.data[:n] = old.weight.data[:n]                       # 9: a child a getter of the model returns
    return new


def resize_gathered(model, n):
    old = model.get_input_embeddings()
    with deepspeed.zero.GatheredParameters([old.weight]):
        rows = old.weight.data[:n].clone()
    return rows, old.weight.dtype
"""


def test_child_a_getter_of_a_handed_model_returns_is_partitioned(tmp_path):
    found = found_in_package(tmp_path, {"lm.py": LM, "resize.py": RESIZE}, "resize.py", prefix="ZG1")
    assert ("ZG109", 9) in found
    assert [f for f in found if f[1] >= 13] == []


WALKED = """
from torch import nn


class Wrapper(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.base_layer = nn.Linear(d, d)

    def forward(self, x):
        return self.base_layer(x)

    def fold(self, delta):
        m = self
        while hasattr(m, "base_layer"):
            m = m.base_layer
        m.weight.data += delta                                      # 17: the child the walk reached

    def describe(self):
        m = self
        while hasattr(m, "base_layer"):
            m = m.base_layer
        return m.weight.dtype
"""


def test_a_local_walked_down_from_self_is_the_child(tmp_path):
    found = found_in_package(tmp_path, {"walked.py": WALKED}, "walked.py", prefix="ZG1")
    assert found == [("ZG101", 17)]
