"""A module that keeps a model it is handed (`self.model = model`, built before the module) takes or loads that
child's state in its own save method, or loads it in its forward (which gathers only the module's own
parameters): ZG108 (`own.own_state_calls`). Against keys alone, a count of them and an optimizer's state."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
import torch
from torch import nn
from torch.nn import Module


class Stopper(Module):
    def __init__(self, model: Module):
        super().__init__()
        self.model = model
        self.register_buffer("signal", torch.tensor(0.0))

    def save(self, path):
        torch.save(dict(model=self.model.state_dict()), path)

    def forward(self):
        if self.signal.item() > 0:
            self.model.load_state_dict(torch.load("prev.pt"))
        return self.signal


class Saver(nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def save_weights(self, path):
        torch.save(self.net.state_dict(), path)
"""

LOOKALIKES = """
import torch
from torch import nn
from torch.nn import Module


class Namer(Module):
    def __init__(self, model: Module):
        super().__init__()
        self.model = model

    def save(self, path):
        torch.save(list(self.model.state_dict().keys()), path)


class OptSaver(nn.Module):
    def __init__(self, model: Module, optimizer):
        super().__init__()
        self.model = model
        self.optimizer = optimizer

    def save(self, path):
        torch.save(self.optimizer.state_dict(), path)

    def forward(self, x):
        return self.model(x)


class Own(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        return self.fc(x) * len(self.fc.state_dict())
"""


def _found(source: str) -> list[tuple[str, int]]:
    text = textwrap.dedent(source)
    return [(f.code, f.line) for f in check_source("m.py", text) if f.code.startswith("ZG1")]


def test_the_state_of_a_handed_model_saved_by_the_module_or_loaded_in_its_forward():
    found = _found(SOURCE)
    assert ("ZG108", 14) in found  # save: the handed model's state dict
    assert ("ZG108", 18) in found  # forward: loaded into the child, which the forward does not gather
    assert ("ZG108", 28) in found  # an unannotated argument named as a model


def test_keys_a_count_and_an_optimizers_state_stay_clean():
    assert _found(LOOKALIKES) == []
