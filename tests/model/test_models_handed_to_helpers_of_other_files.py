"""A training script that builds a model and hands it to a helper of another file of its project: the helper's
summary says what it does to the model (saves its state, reads every parameter's values for a weight average), and
the call is told where the script makes it, since a check of the script alone must show it. The helpers sit in a
folder without `__init__.py` at the top of a checkout of the project (its `.git`), imported as `utils.ema` by a
script one folder down."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import TINY_NET, found

EMA = '''
from collections import OrderedDict
from copy import deepcopy

import torch


def update_ema(ema_model, model, decay=0.9999):
    ema_params = OrderedDict(ema_model.named_parameters())
    model_params = OrderedDict(model.named_parameters())
    for name, param in model_params.items():
        ema_params[name].mul_(decay).add_(param.data, alpha=1 - decay)


def save_checkpoint(model, path):
    torch.save({"model": model.state_dict()}, path)


def count_parameters(model):
    return sum(1 for _name in dict(model.named_parameters()))


class Averaged:
    def __init__(self, model, momentum=0.1):
        self.model = deepcopy(model)
        self.momentum = momentum
'''

TRAIN = '''
from copy import deepcopy

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from utils.ema import Averaged, count_parameters, save_checkpoint, update_ema


''' + TINY_NET + '''

def main(args, loader):
    model = Net()
    ema = deepcopy(model)
    n = count_parameters(model)
    averaged = Averaged(model=model)
    model = DDP(model)
    for x in loader:
        model(x).sum().backward()
        update_ema(ema, model.module._orig_mod if args.compile else model.module)
    save_checkpoint(model.module, "last.pt")
'''


def _project(root: Path) -> Path:
    (root / ".git").mkdir()
    (root / "utils").mkdir()
    (root / "utils" / "ema.py").write_text(EMA)
    (root / "train").mkdir()
    script = root / "train" / "train.py"
    script.write_text(TRAIN)
    return script


def test_a_model_handed_to_a_helper_of_another_file_is_told_at_the_call(tmp_path: Path) -> None:
    script = _project(tmp_path)
    # (the weight average reads the model's parameters, the averaging class copies it, the checkpoint takes its state;
    # counting names reads none)
    assert found(script, "ZG10") == [("ZG105", 21), ("ZG105", 23), ("ZG109", 27), ("ZG108", 28)]
