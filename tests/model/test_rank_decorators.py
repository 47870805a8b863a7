"""ZG201: a decorator of the program whose wrapper runs what it decorates on some ranks only.

`@main_only` defined in the project (`def main_only(fn): def inner(*a): if get_rank() == 0: return fn(*a)`) gates a
method or function like `@rank_zero_only` does: when the decorated code reaches a model, the ranks that skip it never
join that model's all-gathers. The decorated code may be a module's method, a plain class's method or a function, and
the decorator may live in another file of the package.
"""

from __future__ import annotations

from package_check import found_in_package

UTILS = """
import torch.distributed as dist


def get_rank():
    return dist.get_rank() if dist.is_initialized() else 0


def main_only(fn):
    def inner(*args, **kwargs):
        if get_rank() == 0:
            return fn(*args, **kwargs)
        return None
    return inner


def leader_only(fn):
    def inner(*args, **kwargs):
        if dist.get_rank() != 0:
            return None
        return fn(*args, **kwargs)
    return inner


def logged(fn):
    def inner(*args, **kwargs):
        if get_rank() == 0:
            print("calling", fn.__name__)
        return fn(*args, **kwargs)
    return inner
"""

LOOP = """
import torch
from .utils import main_only, leader_only, logged


@main_only
def save_samples(model, z):
    return model(z)


class Runner:
    def __init__(self, net: torch.nn.Module, opt):
        self.net = net
        self.opt = opt

    @leader_only
    def preview(self, z):
        return self.net(z)

    @logged
    def step(self, batch):
        loss = self.net(batch).mean()
        loss.backward()
        self.opt.step()

    @main_only
    def write_log(self, text):
        print(text)
"""


def test_project_decorators_gating_on_the_rank_flag_what_they_decorate(tmp_path):
    found = found_in_package(tmp_path, {"utils.py": UTILS, "loop.py": LOOP}, "loop.py", prefix="ZG201")
    assert ("ZG201", 6) in found  # a function handed the model
    assert ("ZG201", 16) in found  # a plain class's method running its held network (early return in the wrapper)


def test_decorators_that_call_on_every_rank_or_gate_no_model_are_clean(tmp_path):
    found = found_in_package(tmp_path, {"utils.py": UTILS, "loop.py": LOOP}, "loop.py", prefix="ZG201")
    assert ("ZG201", 20) not in found  # `logged` runs the method on every rank; only its print is rank 0's
    assert ("ZG201", 26) not in found  # `write_log` runs no model


MODULE = """
import torch
import torch.nn as nn
import torch.distributed as dist


def on_first(fn):
    def wrapper(self, *args):
        if dist.get_rank() == 0:
            return fn(self, *args)
    return wrapper


class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        return self.proj(x)

    @on_first
    def sample(self, x):
        return self.proj(x)
"""


def test_a_decorator_of_the_same_file_on_a_module_method(tmp_path):
    found = found_in_package(tmp_path, {"net.py": MODULE}, "net.py", prefix="ZG201")
    assert found == [("ZG201", 22)]
