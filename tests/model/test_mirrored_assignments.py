"""A name both sides of a rank test bind to the same value is the same on every rank.

The main process first: `if is_main: ds = make_dataset(cfg)`, a barrier, `if not is_main: ds = make_dataset(cfg)`
(or an `if`/`else` doing the same; another `if is_main:` of the block, one that only logs, aside): every rank ends with the same dataset, so what follows from it (its length, a
policy built from its metadata, a step counter) carries no rank taint (`taint._mirrored_assignments`). Sides that
bind different values, or one side alone, still do.
"""

from __future__ import annotations

from package_check import found_in_package

COMMON = """
from torch import nn


class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.l1 = nn.Linear(d, 512)
        self.l2 = nn.Linear(512, d)

    def forward(self, x):
        return self.l2(self.l1(x))


def make_dataset(cfg):
    return list(range(cfg.n))
"""

TRAIN = """
import deepspeed
import torch.distributed as dist
from .common import Net, make_dataset


def train(cfg, x):
    is_main = dist.get_rank() == 0
    if is_main:
        print("loading")
    if is_main:
        dataset = make_dataset(cfg)
    dist.barrier()
    if not is_main:
        dataset = {other}
    model, _, _, _ = deepspeed.initialize(model=Net(cfg.d), config=cfg.ds)
    for step in range(cfg.steps):
        if step % len(dataset) == 0:
            model(x)
"""

TRAIN_ELSE = """
import deepspeed
from .common import Net, make_dataset


def train(cfg, x, rank):
    if rank == 0:
        dataset = make_dataset(cfg)
        print("downloaded")
    else:
        dataset = make_dataset(cfg)
    model, _, _, _ = deepspeed.initialize(model=Net(cfg.d), config=cfg.ds)
    if len(dataset) > cfg.min_len:
        model(x)
"""


def _found(tmp_path, train: str) -> list[tuple[str, int]]:
    return found_in_package(tmp_path, {"common.py": COMMON, "train.py": train}, "train.py", prefix="ZG2")


def test_main_process_first_binds_the_same_dataset_safe(tmp_path):
    assert _found(tmp_path, TRAIN.format(other="make_dataset(cfg)")) == []


def test_if_else_binding_the_same_value_safe(tmp_path):
    assert _found(tmp_path, TRAIN_ELSE) == []


def test_sides_binding_different_values_differ(tmp_path):
    assert _found(tmp_path, TRAIN.format(other="[]")) == [("ZG201", 18)]
