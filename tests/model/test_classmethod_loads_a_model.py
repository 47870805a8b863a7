"""A module class's class method handed a built model (`@classmethod def load_best_weights(cls, model, path)`) runs
on no module of its own: it is read as a function, and a load into the model it is handed writes partitioned
parameters (ZG108), as a module-level function's does. One that only reads the checkpoint touches no parameter."""

from __future__ import annotations

import textwrap

from package_check import TINY_NET

from zgen.model import check_source

SOURCE = """
import torch
from torch import nn


""" + TINY_NET + """

class Task(nn.Module):
    def __init__(self, model: Net):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)

    @classmethod
    def load_best_weights(cls, model: Net, checkpoint_path):
        state_dict = torch.load(checkpoint_path)["state_dict"]
        {load}
"""


def zg1(load: str) -> list[tuple[str, int]]:
    found = check_source("task.py", textwrap.dedent(SOURCE.format(load=load)))
    return [(f.code, f.line) for f in found if f.code.startswith("ZG1")]


def test_a_class_method_loading_into_the_model_it_is_handed():
    assert zg1("model.load_state_dict(state_dict)") == [("ZG108", 26)]


def test_a_class_method_that_only_reads_the_checkpoint():
    assert zg1("return sorted(state_dict)") == []
