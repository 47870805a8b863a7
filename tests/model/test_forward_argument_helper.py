"""A forward given a module by its caller (`def forward(self, module, grads)`) that hands it to a function computing
with its parameters (`update_module(module, updates)`: `p + u` for each): no hook of that module ran, so the
parameters are partitioned there (ZG301, `params._forward_argument`)."""

from __future__ import annotations

from tests.model.package_check import found_in_package

UTILS = """
def update_module(module, updates=None):
    if updates is not None:
        for p, g in zip(list(module.parameters()), updates):
            p.update = g
    for key in module._parameters:
        p = module._parameters[key]
        if p is not None and p.update is not None:
            module._parameters[key] = p + p.update
    for key in module._modules:
        module._modules[key] = update_module(module._modules[key])
    return module


def describe(module):
    return sum(1 for _ in module.children())
"""

RULES = """
from torch import nn
from .utils import update_module, describe


class DiffSGD(nn.Module):
    def __init__(self, lr):
        super().__init__()
        self.lr = lr

    def forward(self, module, grads):
        updates = [g.mul(-self.lr) for g in grads]
        update_module(module, updates)
        return module


class Runs(nn.Module):
    def forward(self, module, x):
        return module(x)


class Counts(nn.Module):
    def forward(self, module, x):
        return x * describe(module)
"""


def test_forward_hands_its_module_argument_to_an_updating_helper(tmp_path):
    found = found_in_package(tmp_path, {"utils.py": UTILS, "rules.py": RULES}, "rules.py", prefix="ZG3")
    assert ("ZG301", 13) in found


def test_forward_running_or_counting_its_module_argument_is_clean(tmp_path):
    found = found_in_package(tmp_path, {"utils.py": UTILS, "rules.py": RULES}, "rules.py")
    assert [f for f in found if f[1] > 14] == []


LEARNER = """
import torch
from torch import nn
from .rules import DiffSGD, Runs, Counts


class Learner(nn.Module):
    def __init__(self, model, lr):
        super().__init__()
        self.module = model
        self.sgd = DiffSGD(lr)

    def adapt(self, loss):
        grads = torch.autograd.grad(loss, self.module.parameters(), create_graph=True)
        self.sgd(self.module, grads)

    def forward(self, x):
        return self.module(x)


class Stepper(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.module = model
        self.run = Runs()
        self.count = Counts()

    def step(self, x):
        y = self.run(self.module, x)
        return self.count(self.module, y)

    def forward(self, x):
        return self.module(x)
"""


def test_child_handed_to_a_module_whose_forward_updates_it(tmp_path):
    files = {"utils.py": UTILS, "rules.py": RULES, "learner.py": LEARNER}
    assert found_in_package(tmp_path, files, "learner.py", prefix="ZG3") == [("ZG301", 15)]


def test_child_handed_to_modules_that_run_or_count_it_is_clean(tmp_path):
    files = {"utils.py": UTILS, "rules.py": RULES, "learner.py": LEARNER}
    assert [f for f in found_in_package(tmp_path, files, "learner.py") if f[1] > 20] == []
