"""Parameter lists joined with `+` (issue 20, blind27's EMA over `_get_named_tensors(module)`).

* A helper that returns `list(module.named_parameters()) + list(module.named_buffers())`, walked by an EMA (a plain
  class handed the built model) that reads each value outside any forward: the parameters in the joined list are
  the model's partitioned placeholders (ZG109), also for each entry of a `ModuleDict` the EMA walks with `.items()`.
  Look-alike: the same helper returning buffers joined with buffers.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

EMA = """
import torch
from torch import nn


def named_tensors(module: nn.Module):
    first = list(module.{first}())
    rest = list(module.named_buffers())
    return first + rest


class EMA:
    def __init__(self, model: nn.Module, decay=0.999):
        self.model = model
        self.decay = decay
        self.shadow = {{}}

    def step(self):
        for key, val in named_tensors(self.model):
            self.shadow[key] = self.shadow.get(key, val.detach()) * self.decay + val.detach() * (1 - self.decay)
"""


def ema_codes(first: str) -> list[str]:
    return [f.code for f in check_source("ema.py", textwrap.dedent(EMA).format(first=first))]


def test_an_ema_over_parameters_joined_with_buffers_reads_placeholders():
    assert "ZG109" in ema_codes("named_parameters")


def test_an_ema_over_buffers_joined_with_buffers_reads_no_parameter():
    assert ema_codes("named_buffers") == []


def test_an_ema_over_the_entries_of_a_module_dict_reads_placeholders():
    source = EMA.replace("def __init__(self, model: nn.Module, decay=0.999):", "def __init__(self, model: nn.ModuleDict, decay=0.999):")
    source = source.replace("for key, val in named_tensors(self.model):", "for _, module in self.model.items():\n            for key, val in named_tensors(module):")
    source = source.replace("            self.shadow[key] =", "                self.shadow[key] =")
    found = [f.code for f in check_source("ema.py", textwrap.dedent(source).format(first="named_parameters"))]
    assert "ZG109" in found
