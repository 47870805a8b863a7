"""Models a trainer keeps in a registry, key by key.

`def register_model(self, name, model, optim): self._models[name] = model` fills a registry of the models a trainer
trains; saving `self._models[name].state_dict()` between epochs reads ZeRO-3's placeholders (ZG108). The optimizers
registered beside them, and a registry of callbacks, hold no model.

An attribute a method loads a state into and switches to evaluation (`self.model.load_state_dict(sd)`,
`self.model.eval()`) is a module whatever built it (`config.structure.builder.build(device)`); a schedule-free
optimizer does both too, so only an attribute named as modules are counts.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source


def _found(source: str) -> list[tuple[str, int]]:
    found = check_source("engine.py", textwrap.dedent(source))
    return sorted((f.code, f.line) for f in found if f.code.startswith("ZG1"))


SOURCE = """
from collections import OrderedDict

import torch


class Engine:
    def __init__(self):
        self._models = OrderedDict()
        self._optims = OrderedDict()
        self._hooks = {}

    def register_model(self, name="model", model=None, optim=None):
        self._models[name] = model
        self._optims[name] = optim

    def register_hook(self, name, hook):
        self._hooks[name] = hook

    def save_model(self, epoch, path):
        for name in self._models:
            torch.save({"state_dict": self._models[name].state_dict(), "epoch": epoch}, path)

    def save_optimizers(self, path):
        torch.save({name: self._optims[name].state_dict() for name in self._optims}, path)

    def save_hooks(self, path):
        torch.save({name: hook.state_dict() for name, hook in self._hooks.items()}, path)
"""


def test_a_model_kept_in_a_registry_and_saved_reads_placeholders_but_its_optimizer_does_not():
    assert _found(SOURCE) == [("ZG108", 22)]


SWITCHED = """
import torch


class Detector:
    def __init__(self, config, device):
        self.device = device
        self.model = None
        self.optimizer = None

    def construct_model(self, config):
        self.model = config.structure.builder.build(self.device)
        self.optimizer = config.optimizer.build(self.device)

    def load_weight(self, path):
        self.model.load_state_dict(torch.load(path))
        self.model.eval()

    def load_optimizer(self, path):
        self.optimizer.load_state_dict(torch.load(path))
        self.optimizer.eval()
"""


def test_a_model_a_builder_made_that_loads_a_state_and_switches_modes_but_not_an_optimizer():
    assert _found(SWITCHED) == [("ZG108", 16)]
