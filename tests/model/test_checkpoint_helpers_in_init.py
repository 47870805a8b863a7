"""A module's `__init__` handing a child it built to a helper of another file that loads a checkpoint into it
(`load_module_ckpt(self.paraphraser, path)`, itself handing the module on to `load_full_state_dict`) writes a
partitioned child under `zero.Init` (ZG103), as `self.paraphraser.load_state_dict(...)` would. A helper that only
moves the child is fine."""

from __future__ import annotations

from package_check import found_in_package

UTIL = """
import torch


def load_full_state_dict(model, state_dict):
    target = model.module if hasattr(model, "module") else model
    target.load_state_dict(state_dict)


def load_module_ckpt(module, path):
    load_full_state_dict(module, torch.load(path))


def move_module(module, device):
    module.to(device)
"""

WRAPPER = """
from torch import nn

from .util import load_module_ckpt, move_module


class Paraphraser(nn.Module):
    def __init__(self, d, path, device):
        super().__init__()
        self.paraphraser = nn.Linear(d, d)
        {call}

    def forward(self, x):
        return self.paraphraser(x)
"""



def test_a_helper_loading_a_checkpoint_into_the_built_child(tmp_path):
    found = found_in_package(
        tmp_path, {"util.py": UTIL, "wrapper.py": WRAPPER.format(call="load_module_ckpt(self.paraphraser, path)")},
        "wrapper.py", prefix="ZG1",
    )
    assert found == [("ZG103", 11)]


def test_a_helper_moving_the_built_child_is_fine(tmp_path):
    found = found_in_package(
        tmp_path, {"util.py": UTIL, "wrapper.py": WRAPPER.format(call="move_module(self.paraphraser, device)")},
        "wrapper.py", prefix="ZG1",
    )
    assert found == []
