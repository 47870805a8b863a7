"""Four facts from training frameworks and detectors.

* A function of another module of the package called through its module (`pufferlib.pytorch.layer_init(
  nn.Linear(h, n))`) initialises the layer it is handed right after it was built (ZG103), as a function imported by
  name does.
* A library function named for loading a checkpoint into the module handed first (`load_checkpoint(self.teacher,
  path)`, mmengine's) loads into a child `zero.Init` has partitioned (ZG1). A function named otherwise
  (`describe_checkpoint`) is not read so.
* An initialiser run on the built model (an mm-style `init_weights` no constructor runs) reading a child's values
  (`b = conv.bias.data.view(...)`) reads a placeholder (ZG109), besides writing one (ZG103).
* Clipping the parameters an optimizer holds (`clip_grad_norm_(master_params(self.optimizer), c)`,
  `optimizer.param_groups`) clips partitioned placeholders (ZG107); clipping a tensor list of one's own is not that.
"""

from __future__ import annotations

import textwrap

from tests.model.package_check import found_in_package
from zgen.model import check_source

HEAD = """
import math

import torch
from torch import nn
from mmengine.runner import load_checkpoint


class Head(nn.Module):
    def __init__(self, channels=(64, 128), teacher=None, teacher_ckpt=None):
        super().__init__()
        self.convs_pred = nn.ModuleList(nn.Conv2d(c, 255, 1) for c in channels)
        self.teacher = nn.Linear(256, 256)
        if teacher_ckpt:
            load_checkpoint(self.teacher, teacher_ckpt)

    def init_weights(self):
        for conv, stride in zip(self.convs_pred, (8, 16)):
            b = conv.bias.data.view(3, -1)
            b[:, 4] += math.log(8 / (640 / stride) ** 2)
            conv.bias.data = b.view(-1)

    def forward(self, x):
        return [conv(x) for conv in self.convs_pred]
"""

TASK = """
import torch
from torch import nn
from apex.amp import master_params


class Task:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer

    def clip(self, max_norm):
        nn.utils.clip_grad_norm_(master_params(self.optimizer), max_norm)

    def clip_own(self, tensors, max_norm):
        nn.utils.clip_grad_norm_(tensors, max_norm)
"""


def _zg1(source: str) -> list[tuple[str, int]]:
    found = check_source("head.py", textwrap.dedent(source))
    return sorted((f.code, f.line) for f in found if f.code.startswith("ZG1"))


def test_a_checkpoint_loaded_into_a_built_child_and_a_late_initialiser_reading_values():
    found = _zg1(HEAD)
    assert [line for code, line in found if code.startswith("ZG10") and line == 15] == [15]
    assert ("ZG109", 19) in found and ("ZG103", 21) in found


def test_a_function_named_otherwise_loads_nothing():
    other = HEAD.replace("load_checkpoint", "describe_checkpoint")
    assert [f for f in _zg1(other) if f[1] == 15] == []


def test_clipping_an_optimizers_parameters():
    assert _zg1(TASK) == [("ZG107", 13)]


PYTORCH = """
import numpy as np
import torch


def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer
"""

MODELS = """
import torch.nn as nn

import pkg.pytorch


class Policy(nn.Module):
    def __init__(self, hidden_size=128, actions=6):
        super().__init__()
        self.encoder = nn.Linear(8, hidden_size)
        self.decoder = pkg.pytorch.layer_init(
            nn.Linear(hidden_size, actions), std=0.01)

    def forward(self, x):
        return self.decoder(self.encoder(x))
"""


def test_an_initialiser_called_through_its_module_after_the_layer_was_built(tmp_path):
    found = found_in_package(tmp_path, {"pytorch.py": PYTORCH, "models.py": MODELS}, "models.py", prefix="ZG1")
    assert [code for code, _line in found] == ["ZG103"]


def test_a_parameter_handed_as_it_is_to_an_initialiser_is_no_value_read():
    handed = HEAD.replace(
        "            b = conv.bias.data.view(3, -1)\n            b[:, 4] += math.log(8 / (640 / stride) ** 2)\n"
        "            conv.bias.data = b.view(-1)\n",
        "            nn.init.constant_(conv.bias, math.log(8 / (640 / stride) ** 2))\n",
    )
    assert handed != HEAD
    assert [f for f in _zg1(handed) if f[0] == "ZG109"] == []
