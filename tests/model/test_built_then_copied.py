"""A function that builds a model (a module class, a factory of another file, a tuple it returns) and later
deep-copies it (`model_to_save = deepcopy(model)` after training) copies the placeholders `zero.Init` left when the
constructor returned: ZG105 (`loaded.built_then_copied`). Against copies of a config and of values that are no
models."""

from __future__ import annotations

from package_check import found_in_package

NETS = """
from torch import nn


class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        return self.fc(x)


def configure_model(cfg):
    return Net(cfg.d), {"d": cfg.d}
"""

RUN = """
import copy
from copy import deepcopy
import torch
from .nets import Net, configure_model


def run(cfg, train):
    model, output_args = configure_model(cfg)
    train(model)
    if cfg.rank == 0:
        model_to_save = deepcopy(model)
        torch.save(model_to_save, "m.model")


def export(cfg):
    net = Net(cfg.d)
    return copy.deepcopy(net)


def configs(cfg):
    args = copy.deepcopy(cfg)
    spec = {"d": args.d}
    copies = [deepcopy(spec) for _ in range(3)]
    return [Net(s["d"]) for s in copies]
"""


def test_a_model_the_function_built_is_deep_copied(tmp_path):
    found = found_in_package(tmp_path, {"nets.py": NETS, "run.py": RUN}, "run.py", prefix="ZG1")
    assert ("ZG105", 12) in found  # built by another file's factory, unpacked
    assert ("ZG105", 18) in found


def test_copies_of_configs_and_values_stay_clean(tmp_path):
    found = found_in_package(tmp_path, {"nets.py": NETS, "run.py": RUN}, "run.py", prefix="ZG1")
    assert [f for f in found if f[1] >= 21] == []
