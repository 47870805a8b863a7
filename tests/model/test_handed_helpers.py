"""What a helper does to a built model it is handed, judged at the call: its sizes read too (a helper counting the
parameters, `count_parameters(self.model)`: ZG102), and in a free function handed a model by name as well as in a
holder's method (`clone_via(model)`, `count_via(net)`), the helper in another file of the package (h-zg1fde)."""

from __future__ import annotations

from package_check import found_in_package

HELPERS = """
import copy
import deepspeed

def count_params(net):
    return sum(p.numel() for p in net.parameters())

def count_via(net):
    return count_params(net)

def clone_net(net):
    return copy.deepcopy(net)

def clone_via(net):
    return clone_net(net)

def count_tensors(net):
    return sum(1 for _ in net.parameters())

def dtype_of(net):
    return next(net.parameters()).dtype

def gathered_count(net):
    with deepspeed.zero.GatheredParameters(list(net.parameters())):
        return sum(p.numel() for p in net.parameters())
"""


def _found(tmp_path, checked: str) -> set[tuple[str, int]]:
    return set(found_in_package(tmp_path, {"helpers.py": HELPERS, "train.py": checked}, "train.py"))


# A holder's methods and free functions handing a built model to a helper of another file, directly or through a
# second helper or a method of the holder.
HANDED = """
from .helpers import count_params, count_via, clone_via

class Trainer:
    def __init__(self, model):
        self.model = model

    def num_params(self):
        return count_params(self.model)

    def num_params_via(self):
        return count_via(self.model)

    def own_helper(self):
        return self._count(self.model)

    def _count(self, m):
        return count_params(m)

def summary(model):
    return count_via(model)

def snapshot(model):
    return clone_via(model)
"""


def test_a_helper_sizing_or_copying_a_handed_model_is_reported_at_the_call(tmp_path):
    found = _found(tmp_path, HANDED)
    assert {("ZG102", 9), ("ZG102", 12), ("ZG102", 18), ("ZG102", 21)} <= found
    assert ("ZG105", 24) in found


# ... but a helper counting tensors, reading a dtype or sizing inside a gather reads no placeholder size, and a
# model the function builds itself is not partitioned (no `zero.Init` around it).
LOOKALIKES = """
from torch import nn
from .helpers import count_params, count_tensors, dtype_of, gathered_count

def report(model):
    return count_tensors(model), dtype_of(model), gathered_count(model)

def build(d):
    model = nn.Sequential(nn.Linear(d, d))
    return model, count_params(model)

class Logger:
    def __init__(self, model):
        self.model = model

    def log(self):
        return count_tensors(self.model), dtype_of(self.model), gathered_count(self.model)
"""


def test_helpers_reading_no_size_and_models_built_here_stay_clean(tmp_path):
    assert _found(tmp_path, LOOKALIKES) == set()
