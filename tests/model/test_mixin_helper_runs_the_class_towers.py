"""A method a module inherits from a mixin of another file that keeps no member of its own (`self.classification_loss
(t)`, whose `self.classify` runs `self.z_encoder` and `self.classifier`) runs the towers of the class that mixes it in:
run only when an optional input was given, ranks whose batch lacks it skip their gathers (ZG205). A mixin method that
computes without a layer (`self.kl_weight(step)`) runs none."""

from __future__ import annotations

from pathlib import Path

from package_check import found_in_package

MIXIN = """
import torch.nn.functional as F


class SupervisedMixin:
    def classify(self, x):
        return self.classifier(self.z_encoder(x))

    def classification_loss(self, labelled):
        return F.cross_entropy(self.classify(labelled["x"]), labelled["y"])

    def kl_weight(self, labelled):
        return min(1.0, len(labelled) / 100)
"""

MODEL = """
from torch import nn

from .mixin import SupervisedMixin


class SemiSupervisedVAE(SupervisedMixin, nn.Module):
    def __init__(self, dim, n):
        super().__init__()
        self.z_encoder = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim))
        self.classifier = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, n))
        self.decoder = nn.Linear(dim, dim)

    def forward(self, x):
        return self.decoder(self.z_encoder(x))

    def loss(self, x, out, labelled_tensors=None):
        loss = ((out - x) ** 2).mean()
        if labelled_tensors is not None:
            loss = loss + self.{helper}(labelled_tensors)
        return loss
"""


def zg205(tmp_path: Path, helper: str) -> list[tuple[str, int]]:
    files = {"mixin.py": MIXIN, "model.py": MODEL.replace("{helper}", helper)}
    return found_in_package(tmp_path, files, "model.py", prefix="ZG205")


def test_a_mixin_helper_running_the_class_towers_on_an_optional_input(tmp_path: Path) -> None:
    assert zg205(tmp_path, "classification_loss") == [("ZG205", 19)]


def test_a_mixin_helper_running_no_layer_is_left_alone(tmp_path: Path) -> None:
    assert zg205(tmp_path, "kl_weight") == []
