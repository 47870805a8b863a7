"""A trainer's base class reached through `super().evaluate(x)` (the base's method runs: `script._script_indirect`,
`index.super_method`) runs what the base's method runs: a rank gate around it is ZG201. Beside a look-alike whose base
method only prints."""

from __future__ import annotations

from package_check import Q_NETS, found_in_package

NETS = Q_NETS

BASE = """
from .nets import QNet


class Trainer:
    def __init__(self, q: QNet, rank=0):
        self.q = q
        self.rank = rank

    def evaluate(self, x):
        return self.q(x).mean()

    def log(self, x):
        print(x)
"""

SUPER_EVALUATES = """
from .base import Trainer


class MyTrainer(Trainer):
    def evaluate(self, x):
        if self.rank == 0:
            return super().evaluate(x)
        return None
"""

SUPER_LOGS = """
from .base import Trainer


class MyTrainer(Trainer):
    def log(self, x):
        if self.rank == 0:
            super().log(x)
"""


def _found(tmp_path, source):
    files = {"nets.py": NETS, "base.py": BASE, "train.py": source}
    return found_in_package(tmp_path, files, "train.py", prefix="ZG2")


def test_base_method_run_through_super_under_a_rank_gate(tmp_path):
    assert ("ZG201", 7) in _found(tmp_path, SUPER_EVALUATES)


def test_base_method_through_super_that_only_prints(tmp_path):
    assert _found(tmp_path, SUPER_LOGS) == []
