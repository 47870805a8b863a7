"""A constructor that hands `self` to a loader (`load_pretrained_network(self, path)`, which calls
`net.load_state_dict(...)`) after building its children loads a checkpoint into children `zero.Init` has
partitioned: the loaded values are lost (ZG103), as when it loads into one child (`self.fc.load_state_dict(...)`).

Not such a load: a helper that only logs the module's class name, and the same loader run before any child was built.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

LOADED = """
import torch
from torch import nn


def load_pretrained_network(net, model_path, strict=True):
    print(f"loading {net.__class__.__name__} from {model_path}")
    state_dict = torch.load(model_path, map_location="cpu")
    net.load_state_dict(state_dict, strict=strict)


def describe(net, model_path):
    print(f"{net.__class__.__name__} will load {model_path}")


class Ranker(nn.Module):
    def __init__(self, path=None):
        super().__init__()
        self.backbone = nn.Linear(1024, 1024)
        self.head = nn.Linear(1024, 1)
        if path is not None:
            load_pretrained_network(self, path)

    def forward(self, x):
        return self.head(self.backbone(x))
"""


def _zg1(source: str) -> list[tuple[str, int]]:
    found = check_source("ranker.py", textwrap.dedent(source))
    return sorted((f.code, f.line) for f in found if f.code.startswith("ZG1"))


def test_a_checkpoint_loaded_into_self_after_its_children_were_built():
    assert _zg1(LOADED) == [("ZG103", 22)]


def test_a_helper_that_only_names_the_module_loads_nothing():
    described = LOADED.replace("load_pretrained_network(self, path)", "describe(self, path)")
    assert [f for f in _zg1(described) if f[0] == "ZG103"] == []


def test_a_checkpoint_loaded_before_any_child_was_built():
    early = LOADED.replace(
        "        self.backbone = nn.Linear(1024, 1024)\n        self.head = nn.Linear(1024, 1)\n"
        "        if path is not None:\n            load_pretrained_network(self, path)\n",
        "        if path is not None:\n            load_pretrained_network(self, path)\n"
        "        self.backbone = nn.Linear(1024, 1024)\n        self.head = nn.Linear(1024, 1)\n")
    assert early != LOADED
    assert [f for f in _zg1(early) if f[0] == "ZG103"] == []
