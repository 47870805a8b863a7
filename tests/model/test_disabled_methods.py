"""A method that reaches a model replaced on some ranks by a function of the file that calls nothing (`def
_disable_update(*_, **__): return None, None`, like a no-op lambda: `script._no_op`), on `self` or on an instance a
classmethod builds (`frame = cls(q, opt)`: `plain._local_instances`): only the other ranks run the update's forward
and backward, ZG201. Beside a look-alike silencing a method that runs no model."""

from __future__ import annotations

from package_check import Q_NETS, found_in_package

NETS = Q_NETS

BASE = """
from .nets import QNet


class DQN:
    def __init__(self, q: QNet, opt):
        self.q = q
        self.opt = opt

    def update(self, batch):
        loss = self.q(batch).mean()
        loss.backward()
        self.opt.step()
        return loss.item(), None
"""

CLASSMETHOD = """
import torch.distributed as dist
from .base import DQN


def _disable_update(*_, **__):
    return None, None


class DQNApex(DQN):
    @classmethod
    def make(cls, q, opt, learners):
        frame = cls(q, opt)
        if dist.get_rank() >= learners:
            frame.update = _disable_update
        return frame
"""

SILENCED_LOG = """
import torch.distributed as dist
from .base import DQN


def _quiet(*_, **__):
    return None


class DQNApex(DQN):
    def __init__(self, q, opt, learners):
        super().__init__(q, opt)
        self.log = print
        if dist.get_rank() != 0:
            self.log = _quiet
"""


def test_update_disabled_on_some_ranks_of_a_built_frame(tmp_path):
    files = {"nets.py": NETS, "base.py": BASE, "apex.py": CLASSMETHOD}
    assert ("ZG201", 14) in found_in_package(tmp_path, files, "apex.py", prefix="ZG2")


def test_logging_silenced_on_some_ranks(tmp_path):
    files = {"nets.py": NETS, "base.py": BASE, "apex.py": SILENCED_LOG}
    assert found_in_package(tmp_path, files, "apex.py", prefix="ZG2") == []
