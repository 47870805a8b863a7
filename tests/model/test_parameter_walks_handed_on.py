"""A helper of another file that hands a module argument's parameters on as an iterable: `ema_update(ema, model,
decay)` calling `_lerp(ema.parameters(), model.parameters(), 1 - decay)`, whose loop writes the items of its first
argument. What the inner helper does to the items, the outer one does to the module's parameters, so a trainer's
`ema_update(self.ema_model, self.model, 0.999)` writes the partitioned parameters of `self.ema_model` (ZG101). An
optimizer built from the iterable, or a helper that reads only the items' flags, stays clean.
"""

from __future__ import annotations

from package_check import found_in_package

OPS = """
import torch


def _lerp(dst_params, src_params, w):
    for d, s in zip(dst_params, src_params):
        d.data.lerp_(s.data, w)


def ema_update(ema_model, model, decay):
    _lerp(ema_model.parameters(), list(model.parameters()), 1 - decay)


def _trainable(params):
    return [p for p in params if p.requires_grad]


def make_optimizer(model, lr):
    return torch.optim.Adam(_trainable(model.parameters()), lr=lr)
"""

TRAIN = """
import copy
import torch
from .ops import ema_update, make_optimizer


class Trainer:
    def __init__(self, model: torch.nn.Module, ema_model: torch.nn.Module):
        self.model = model
        self.ema_model = ema_model
        self.opt = make_optimizer(self.model, 1e-4)

    def step(self, batch):
        self.model(batch).mean().backward()
        self.opt.step()
        ema_update(self.ema_model, self.model, 0.999)
"""


def test_parameters_handed_on_to_a_writer_are_written(tmp_path):
    found = found_in_package(tmp_path, {"ops.py": OPS, "train.py": TRAIN}, "train.py", prefix="ZG1")
    assert ("ZG101", 16) in found


def test_an_optimizer_built_from_the_trainable_parameters_is_clean(tmp_path):
    found = found_in_package(tmp_path, {"ops.py": OPS, "train.py": TRAIN}, "train.py", prefix="ZG1")
    assert [line for _code, line in found if line == 11] == []
