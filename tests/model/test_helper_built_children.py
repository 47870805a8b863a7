"""Children a helper method builds, used later in `__init__` (blind9 chemprop model.py:76).

The fact: `self.create_encoder(args)` called from `__init__` builds (and under `deepspeed.zero.Init`
partitions) the children it assigns at that call; what `__init__` does with them after the call (an
initialiser, a walk of `self` that initialises every parameter, a size query) sees placeholders. Before,
a child built in a helper was ordered after everything `__init__` itself does.

Safe look-alikes: the walk before the helper's call, `self.apply(init)` (gathered by `zero.Init`).
"""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found_in_package

UTILS = """
import torch.nn as nn

def initialize_weights(model):
    for param in model.parameters():
        if param.dim() == 1:
            nn.init.constant_(param, 0)
        else:
            nn.init.xavier_normal_(param)
"""

MODEL = """
import torch
import torch.nn as nn
from .utils import initialize_weights


class Walked(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.create_encoder(d)
        self.create_ffn(d)
        initialize_weights(self)

    def create_encoder(self, d):
        self._layers(d)

    def _layers(self, d):
        self.encoder = nn.Linear(d, d)

    def create_ffn(self, d):
        self.ffn = nn.Sequential(nn.Linear(d, d), nn.ReLU())


class Direct(nn.Module):
    def __init__(self, d):
        super().__init__()
        self._build(d)
        nn.init.zeros_(self.head.weight)
        self.width = self.head.weight.shape[0]

    def _build(self, d):
        self.head = nn.Linear(d, d)


class WalkedFirst(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(d))
        initialize_weights(self)
        self._build(d)

    def _build(self, d):
        self.head = nn.Linear(d, d)


class Applied(nn.Module):
    def __init__(self, d):
        super().__init__()
        self._build(d)
        self.apply(self._init)

    def _build(self, d):
        self.head = nn.Linear(d, d)

    def _init(self, m):
        if isinstance(m, nn.Linear):
            nn.init.zeros_(m.weight)
"""


def _line(needle: str, after: str = "") -> int:
    lines = MODEL.splitlines()
    start = next(i for i, text in enumerate(lines) if after in text) if after else 0
    return next(i for i, text in enumerate(lines[start:], start + 1) if needle in text)


def test_children_built_by_helpers_are_partitioned_at_the_call(tmp_path: Path) -> None:
    got = found_in_package(tmp_path, {"utils.py": UTILS, "model.py": MODEL}, "model.py", prefix="ZG1")
    assert ("ZG103", _line("initialize_weights(self)", "class Walked")) in got
    assert ("ZG103", _line("nn.init.zeros_(self.head.weight)", "class Direct")) in got
    assert ("ZG102", _line("self.width = self.head.weight.shape[0]", "class Direct")) in got


def test_walk_before_the_helper_and_apply_stay_clean(tmp_path: Path) -> None:
    got = found_in_package(tmp_path, {"utils.py": UTILS, "model.py": MODEL}, "model.py", prefix="ZG1")
    start = _line("class WalkedFirst")
    assert [hit for hit in got if hit[1] >= start] == []
