"""An initialiser the module runs on itself after construction that loads a checkpoint into `self` (ZG108).

`def init_from_pretrained(self, path): self.load_state_dict(torch.load(path), strict=False)`, which neither
`__init__` nor `forward` reaches: the training script calls it on the built model, whose parameters ZeRO-3 has
partitioned, so the load copies into placeholders. The same load inside `GatheredParameters` is clean.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

NET = """
import deepspeed
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return self.fc(x)

"""


def codes(method: str) -> list[tuple[str, int]]:
    source = NET + textwrap.indent(textwrap.dedent(method), "    ")
    return [(f.code, f.line) for f in check_source("net.py", source) if f.code.startswith("ZG1")]


def test_a_checkpoint_loaded_into_self_by_a_late_initialiser():
    assert codes("""
        def maybe_init_from_pretrained(self, cfg):
            if cfg.init_from is not None:
                restored = torch.load(cfg.init_from, map_location="cpu")
                self.load_state_dict(restored["state_dict"], strict=False)
    """) == [("ZG108", 19)]


def test_the_same_load_inside_gathered_parameters_is_clean():
    assert codes("""
        def maybe_init_from_pretrained(self, cfg):
            if cfg.init_from is not None:
                restored = torch.load(cfg.init_from, map_location="cpu")
                with deepspeed.zero.GatheredParameters(list(self.parameters()), modifier_rank=0):
                    self.load_state_dict(restored["state_dict"], strict=False)
    """) == []
