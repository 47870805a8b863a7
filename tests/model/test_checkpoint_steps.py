"""What a held model's checkpoint I/O hands back is no data of this rank.

`step = self.netD.restore_checkpoint(path)` reads a step from a file every rank shares: a loop
`while step < self.num_steps` that trains the model is the same on every rank (no ZG204), while a loop bounded by
what the model computed (`step < self.netD(x).sum()`) is not.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

TRAINER = """
import torch


class Trainer:
    def __init__(self, netD, num_steps, ckpt_file):
        self.netD = netD
        self.num_steps = num_steps
        self.ckpt_file = ckpt_file

    def train(self, train_loader):
        global_step = self.netD.restore_checkpoint(ckpt_file=self.ckpt_file)
        batches = iter(train_loader)
        while global_step < self.num_steps:
            loss = self.netD.train_step(next(batches))
            loss.backward()
            global_step += 1
"""

def _zg2(source: str) -> list[tuple[str, int]]:
    found = check_source("train.py", textwrap.dedent(source))
    return sorted((f.code, f.line) for f in found if f.code.startswith("ZG2"))


def test_a_step_restored_from_a_checkpoint_bounds_no_data_loop():
    assert _zg2(TRAINER) == []


def test_a_step_bounded_by_the_models_output_does():
    computed = TRAINER.replace("self.netD.restore_checkpoint(ckpt_file=self.ckpt_file)",
                               "self.netD(next(iter(train_loader))).sum()")
    assert [code for code, _line in _zg2(computed)] == ["ZG204"]
