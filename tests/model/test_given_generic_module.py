"""A module that stores a constructor argument annotated only as a module (`def __init__(self, model: nn.Module)`
... `self.policy_model = model`) holds a module handed in, with parameters we cannot see, even when it never calls
it and only hands it to a function (`log_prob(self.policy_model, seq)`): calling the wrapper gathers them
(`members._given_generic_modules`). A wrapper handed only settings owns none."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
import torch.distributed as dist
from torch import nn


def log_prob(model, seq):
    return model(seq).log_softmax(-1)


class Wrapper(nn.Module):
    def __init__(self, model: nn.Module, scale: float = 1.0):
        super().__init__()
        self.policy_model = model
        self.scale = scale

    def forward(self, seq):
        return log_prob(self.policy_model, seq) * self.scale


class Trainer(nn.Module):
    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = Wrapper(model)

    def validate(self, seq):
        return self.model(seq)

    def forward(self, seq):
        if dist.get_rank() == 0:
            self.validate(seq)
        return seq
"""


def _zg201(src: str) -> list[int]:
    return [f.line for f in check_source("m.py", textwrap.dedent(src), None) if f.code == "ZG201"]


def test_wrapper_of_a_given_module_runs_it():
    assert _zg201(SOURCE) == [29]


def test_wrapper_of_settings_runs_nothing():
    src = SOURCE.replace("model: nn.Module, scale", "model: float, scale").replace(
        "log_prob(self.policy_model, seq) * self.scale", "seq * self.policy_model * self.scale")
    assert _zg201(src) == []
