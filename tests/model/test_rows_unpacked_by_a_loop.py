"""A loop unpacking rows of a literal sequence takes each column's items (`for model, name in pairs`).

A trainer module evaluating on rank 0 builds `pairs = ((unwrapped, str(steps)),)`, prepends the EMA copy's row,
and runs `model(x)` for each row: the models run only on the main rank (ZG201). A column of strings is no model,
and the same loop outside any rank test decides nothing.
"""

from __future__ import annotations

import textwrap

from tests.model.package_check import WIDE_NET
from zgen.model import check_source

TRAINER = """
import torch
from torch import nn
from accelerate import Accelerator


""" + WIDE_NET + """

class Trainer(nn.Module):
    def __init__(self, vae: Net):
        super().__init__()
        self.accelerator = Accelerator()
        self.vae = vae

    @property
    def is_main(self):
        return self.accelerator.is_main_process

    def sample(self, x, steps):
        if self.is_main{gate}:
            unwrapped = self.accelerator.unwrap_model(self.vae)
            pairs = ((unwrapped, str(steps)),)
            pairs = ((self.vae, f"{{steps}}.raw"),) + pairs
            for model, name in pairs:
                model(x)
                print(name)
"""


def _zg2(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("trainer.py", textwrap.dedent(source)) if f.code.startswith("ZG2")]


def test_models_unpacked_from_rows_run_on_the_main_rank_only():
    assert _zg2(TRAINER.format(gate=" and not (steps % 10)")) == [("ZG201", 27)]


def test_the_same_rows_walked_on_every_rank_decide_nothing():
    source = TRAINER.format(gate="").replace("        if self.is_main:\n", "        if True:\n")
    assert _zg2(source) == []
