"""ZG205: a plain object holding a model (a trainer, an agent) runs the model, or a part of it, on an optional input of
its method only when the call was given one.

`if exists(images): feats = self.model.vision(images)` in a trainer's step: a rank whose batch has no images skips
the vision tower's gathers. Only calls that run a module count (not `self.model.to(device)`), on a value computed
from the tested input; an optional loader the method loops over is the caller's choice of phase, the same on every
rank.
"""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found_in_package

_HEAD = """
import torch
from torch import nn


def exists(v):
    return v is not None


class Tower(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.a = nn.Linear(d, d)
        self.b = nn.Linear(d, d)

    def forward(self, x):
        return self.b(self.a(x))


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.text = Tower(d)
        self.vision = Tower(d)

    def forward(self, tokens, image_embeds):
        return self.text(tokens) + image_embeds


"""


def _found(tmp_path: Path, source: str) -> list[int]:
    return [line for _, line in found_in_package(tmp_path, {"model.py": _HEAD + source}, "model.py", prefix="ZG205")]


def test_a_trainer_runs_the_vision_tower_only_when_given_images(tmp_path: Path) -> None:
    lines = _found(tmp_path, """
class Trainer:
    def __init__(self, d):
        self.model = Model(d)

    def step(self, tokens, images=None):
        image_embeds = 0
        if exists(images):
            image_embeds = self.model.vision(images)
        return self.model(tokens, image_embeds)
""")
    assert lines == [37]


def test_a_trainer_runs_the_tower_on_a_batch_entry_it_may_lack(tmp_path: Path) -> None:
    lines = _found(tmp_path, """
class Trainer:
    def __init__(self, model: Model):
        self.model = model

    def step(self, batch):
        feats = torch.zeros(1)
        images = batch.get("images")
        if images is None:
            pass
        else:
            feats = self.model.vision(images.float() / 255)
        return self.model(batch["tokens"], feats)
""")
    assert lines == [38]


def test_a_model_run_either_way_a_loader_or_a_move_is_left_alone(tmp_path: Path) -> None:
    assert _found(tmp_path, """
class Trainer:
    def __init__(self, model: Model):
        self.model = model

    def step(self, tokens, images=None):
        if images is None:
            images = torch.zeros(1)
        return self.model(tokens, self.model.vision(images))

    def fit(self, loader, val_loader=None):
        for batch in loader:
            self.model(batch["tokens"], 0)
        if val_loader is not None:
            for batch in val_loader:
                self.model(batch["tokens"], 0)

    def place(self, device=None):
        if device is not None:
            self.model.to(device)
""") == []
