"""A training manager hands out its models through a property annotated as a mapping of modules.

`@property def models(self) -> Mapping[str, torch.nn.Module]` tells what each item is: `self.models[name]
.state_dict()` in the manager's `state_dict` reads every partitioned model's placeholders (ZG108), and loading
into them is ZG108 too. A property annotated as a mapping of numbers hands out no model.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

MANAGER = """
from typing import Dict, Mapping
import torch


class Manager:
    def __init__(self, models, optimizers, stats):
        self._models = models
        self._optimizers = optimizers
        self._stats = stats

    @property
    def models(self) -> {annotation}:
        return dict(self._models)

    def state_dict(self):
        return {{"models": {{name: self.models[name].state_dict() for name in self.models}}}}

    def load_state_dict(self, state):
        for name in self.models:
            self.models[name].load_state_dict(state["models"][name])
"""


def _zg1(annotation: str) -> list[tuple[str, int]]:
    source = textwrap.dedent(MANAGER.format(annotation=annotation))
    return sorted((f.code, f.line) for f in check_source("manager.py", source) if f.code.startswith("ZG1"))


def test_models_handed_out_by_an_annotated_property():
    assert _zg1("Mapping[str, torch.nn.Module]") == [("ZG108", 17), ("ZG108", 21)]


def test_a_property_of_numbers_hands_out_no_model():
    assert _zg1("Dict[str, float]") == []
