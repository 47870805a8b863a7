"""A file that imports a module of its own name means another module of that name.

FastSpeech2's `utils/model.py` (a directory of scripts, no `__init__.py`) says `from model import FastSpeech2`: not
itself, which defines no such name, but the `model/` package at the project's top (its scripts run from there).
The model it builds and loads is one of that package's classes. A sibling importing the file by that name
(`from base import Agent` while `base.py` is checked) still means the file.
"""

from __future__ import annotations

import textwrap

from tests.model.package_check import found

MODEL_PACKAGE = """
from torch import nn


class FastSpeech2(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.encoder = nn.Linear(d, d)

    def forward(self, x):
        return self.encoder(x)
"""

UTILS_MODEL = """
import torch

from model import FastSpeech2


def get_model(args, device):
    model = FastSpeech2(args.d).to(device)
    if args.restore_step:
        model.load_state_dict(torch.load(args.ckpt)["model"])
    return model
"""


def test_a_self_named_import_finds_the_package_of_that_name(tmp_path):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "__init__.py").write_text("from .fastspeech2 import FastSpeech2\n")
    (tmp_path / "model" / "fastspeech2.py").write_text(textwrap.dedent(MODEL_PACKAGE))
    (tmp_path / "utils").mkdir()
    (tmp_path / "utils" / "model.py").write_text(textwrap.dedent(UTILS_MODEL))
    (tmp_path / "train.py").write_text("from utils.model import get_model\n")
    assert found(tmp_path / "utils" / "model.py", "ZG1") == [("ZG108", 10)]
