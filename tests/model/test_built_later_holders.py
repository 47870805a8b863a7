"""A plain object keeps a model that one of its own methods builds (`def init_GAN(self): self.GAN = GAN(d)`, also
through a factory function of another file): its other methods run on the built, partitioned model, so its state
saved, loaded or copied there is ZG108/ZG105 (`holds.held_attributes`). Against state of objects that are no
models and a state dict read for its keys."""

from __future__ import annotations

from package_check import found_in_package

NETS = """
from torch import nn


class GAN(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.G = nn.Linear(d, d)
        self.D = nn.Linear(d, 1)

    def forward(self, x):
        return self.D(self.G(x))


def make_gan(d):
    return GAN(d)
"""

TRAINER = """
import copy
import torch
from .nets import GAN, make_gan


class Trainer:
    def __init__(self, d):
        self.d = d
        self.GAN = None

    def init_GAN(self):
        self.GAN = GAN(self.d)

    def save(self, path):
        torch.save({"GAN": self.GAN.state_dict()}, path)

    def load(self, path):
        self.GAN.load_state_dict(torch.load(path)["GAN"])

    def snapshot(self):
        return copy.deepcopy(self.GAN)


class Runner:
    def setup(self, d):
        self.model = make_gan(d)

    def checkpoint(self, path):
        torch.save(self.model.state_dict(), path)
"""

LOOKALIKES = """
import torch
from .nets import GAN


class Keeper:
    def setup(self):
        self.stats = dict(a=1)

    def save(self, path):
        torch.save(self.stats, path)


class Lister:
    def setup(self, d):
        self.net = GAN(d)

    def names(self):
        return list(self.net.state_dict().keys())
"""


def test_a_model_a_method_of_the_holder_builds_is_saved_loaded_and_copied_as_built(tmp_path):
    found = found_in_package(tmp_path, {"nets.py": NETS, "trainer.py": TRAINER}, "trainer.py", prefix="ZG1")
    assert ("ZG108", 16) in found  # save: its state dict
    assert ("ZG108", 19) in found  # load: into it
    assert ("ZG105", 22) in found  # a deep copy of it
    assert ("ZG108", 30) in found  # built by a factory function of another file


def test_objects_that_are_no_models_and_keys_alone_stay_clean(tmp_path):
    assert found_in_package(tmp_path, {"nets.py": NETS, "other.py": LOOKALIKES}, "other.py", prefix="ZG1") == []
