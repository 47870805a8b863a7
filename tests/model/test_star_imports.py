"""A class a script takes through a star import of a sibling module (`from models import *`, PyTorch-GAN's scripts)
is read in that module: the generator it builds is a model."""

from __future__ import annotations

from package_check import found_in_directory

MODELS = """
from torch import nn


class GeneratorRRDB(nn.Module):
    def __init__(self, channels, filters=64):
        super().__init__()
        self.conv = nn.Conv2d(channels, filters, 3)

    def forward(self, x):
        return self.conv(x)
"""

SCRIPT = """
import torch

from models import *

generator = GeneratorRRDB(3, filters=64)
for epoch in range(10):
    torch.save(generator.state_dict(), "saved_models/generator_%d.pth" % epoch)
"""


def _found(tmp_path, models: str) -> list[tuple[str, int]]:
    return found_in_directory(tmp_path, {"models.py": models, "esrgan.py": SCRIPT}, "esrgan.py")


def test_a_model_class_taken_by_a_star_import_builds_a_model(tmp_path):
    assert ("ZG108", 8) in _found(tmp_path, MODELS)


def test_a_plain_class_taken_by_a_star_import_builds_none(tmp_path):
    plain = MODELS.replace("class GeneratorRRDB(nn.Module):", "class GeneratorRRDB:").replace(
        "        super().__init__()\n", "")
    assert ("ZG108", 8) not in _found(tmp_path, plain)
