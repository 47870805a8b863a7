"""A function of the program that makes an agreeing collective and returns (`broadcast_from_master(flag)` calling
`dist.broadcast_object_list(box, src=0)` and returning `box[0]`, in a utilities file) hands back the value every
rank received (`taint.agreeing_function`): a loop leaving on it leaves on every rank at once. The same loop leaving on
what a helper that makes no collective hands back leaves on this rank's own loss (ZG204)."""

from __future__ import annotations

from package_check import Q_NETS, found_in_package

DDP_UTILS = """
import torch.distributed as dist


def broadcast_from_master(data):
    if dist.get_world_size() == 1:
        return data
    box = [data] if dist.get_rank() == 0 else [None]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def as_flag(data):
    return bool(data)
"""

TRAINER = """
from .nets import QNet
from .ddp_utils import {check}


class Trainer:
    def __init__(self, model: QNet):
        self.model = model

    def _train_epoch(self, batch):
        return self.model(batch).mean()

    def train(self, batch, epochs):
        for epoch in range(epochs):
            loss = self._train_epoch(batch)
            if {check}(loss.item() > 5.0):
                break
"""


def _found(tmp_path, check: str) -> list[tuple[str, int]]:
    files = {"nets.py": Q_NETS, "ddp_utils.py": DDP_UTILS, "trainer.py": TRAINER.format(check=check)}
    return found_in_package(tmp_path, files, "trainer.py", prefix="ZG2")


def test_exit_on_what_a_plain_helper_hands_back_is_per_rank(tmp_path):
    assert [code for code, _line in _found(tmp_path, "as_flag")] == ["ZG204"]


def test_exit_on_a_broadcast_from_the_master_is_agreed(tmp_path):
    assert _found(tmp_path, "broadcast_from_master") == []
