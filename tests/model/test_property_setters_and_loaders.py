"""Three facts of trainers and modules seen in RL and federated code.

* A property with a setter is two methods of one name: the getter (`return int(self._step.item())`, which reads a
  parameter's value on the built model: ZG109) is what a read of the attribute runs, and the setter still writes.
* A model held under a GAN's role names (`netG`, `netd`) is a model like `net_g`: a trainer's `state_dict()` of it
  reads placeholders (ZG108).
* A loop over `train_data` (a loader by its name, like `train_loader`) that skips the model for a short batch
  (`if len(x) < 2: continue`) skips it on some ranks only (ZG203). Not a loop over a list of settings.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

STEPS = """
import torch
from torch import nn


class GlobalSteps(nn.Module):
    def __init__(self):
        super().__init__()
        self._step = nn.Parameter(torch.Tensor([0]).to(torch.int64), requires_grad=False)

    @property
    def current_step(self):
        return int(self._step.item())

    @current_step.setter
    def current_step(self, value):
        self._step[:] = value
"""

TRAINER = """
import torch


class GANTrainer:
    def __init__(self, netd, netG):
        self.netd = netd
        self.netG = netG

    def get_model_params(self):
        return {"d": self.netd.state_dict(), "g": self.netG.state_dict()}

    def train(self, train_data, device):
        netd = self.netd
        for batch_idx, (x, _) in enumerate(train_data):
            if len(x) < 2:
                continue
            loss = netd(x.to(device)).mean()
            loss.backward()
"""


def _found(source: str, family: str) -> list[tuple[str, int]]:
    found = check_source("trainer.py", textwrap.dedent(source))
    return sorted((f.code, f.line) for f in found if f.code.startswith(family))


def test_a_getter_beside_its_setter_is_read():
    assert _found(STEPS, "ZG1") == [("ZG101", 17), ("ZG109", 13)]


def test_a_getter_reading_a_buffer_is_no_read():
    buffer = STEPS.replace(
        "self._step = nn.Parameter(torch.Tensor([0]).to(torch.int64), requires_grad=False)",
        'self.register_buffer("_step", torch.Tensor([0]).to(torch.int64))')
    assert _found(buffer, "ZG1") == []


def test_models_under_gan_role_names_are_held_models():
    assert _found(TRAINER, "ZG1") == [("ZG108", 11), ("ZG108", 11)]


def test_a_short_batch_of_train_data_skips_the_model_on_some_ranks():
    assert _found(TRAINER, "ZG2") == [("ZG203", 16)]


def test_a_loop_over_settings_is_no_loader():
    settings = TRAINER.replace("enumerate(train_data)", "enumerate(train_sizes)").replace(
        "def train(self, train_data, device)", "def train(self, train_sizes, device)")
    assert _found(settings, "ZG2") == []
