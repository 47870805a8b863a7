"""What a forward hook a class registers keeps of the hooked module's run is this rank's data (`analysis/hooks.py`).

An LSUV-style initialiser registers a hook that keeps the layer's output (`self.store["act"] = out`, or an item of a
dict the method making the hook bound from `self`) and runs the model until that output's spread is within tolerance:
ranks run the model a different number of times (ZG204). The same loop run a fixed number of times, or on a count
the hook keeps (the same on every rank), is clean.
"""

from __future__ import annotations

from package_check import found, write_package

INIT = """
import torch
from torch import nn


class Initialiser:
    def __init__(self):
        self.store = {"act": None, "hook": None}

    def wrapper(self):
        store = self.store

        def keep(module, inp, out):
            store["act"] = out.detach()

        return keep

    def init_model(self, model, data, needed_std=1.0, tol=0.1):
        for m in model.modules():
            if isinstance(m, nn.Linear):
                self.store["hook"] = m.register_forward_hook(self.wrapper())
                _ = model(data)
                current = self.store["act"].std()
                while torch.abs(current - needed_std).item() > tol:
                    _ = model(data)
                    current = self.store["act"].std()
                self.store["hook"].remove()
"""

SAFE = """
import torch
from torch import nn


class FixedInitialiser:
    def __init__(self, steps):
        self.store = {"act": None}
        self.steps = steps
        self.seen = 0

    def keep(self, module, inp, out):
        self.store["act"] = out.detach()
        self.seen += 1

    def init_model(self, model, data):
        for m in model.modules():
            if isinstance(m, nn.Linear):
                handle = m.register_forward_hook(self.keep)
                for _ in range(3):
                    _ = model(data)
                    m.weight.data /= self.store["act"].std()
                while self.seen < self.steps:
                    _ = model(data)
                handle.remove()
"""


def test_loop_on_what_a_forward_hook_kept(tmp_path):
    path = write_package(tmp_path, {"init.py": INIT}) / "init.py"
    assert ("ZG204", 24) in found(path, "ZG2")


def test_fixed_count_and_a_call_count_kept_by_the_hook_are_clean(tmp_path):
    path = write_package(tmp_path, {"init.py": SAFE}) / "init.py"
    assert found(path, "ZG2") == []
