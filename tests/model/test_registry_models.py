"""Models a registry builds, and what is done to them once built.

* A function of the package named as model factories are (`build_model`) that returns what a registry holds
  (`MODULE_BUILD_FUNCS.get(args.modelname)(args)`) builds a model no file tells: a state loaded into it right after
  is loaded into placeholders (ZG108), as for `timm.create_model`. A function so named that returns a value the
  file can read (a dict) builds no model.
* `model = nn.DataParallel(model)` later in a function wraps the same model: the sizes counted before it are still a
  built model's (ZG102). Which parameters train is no size.
* A class with `forward` that builds its backbone through a registry (`self.backbone = MODELS.build(cfg)`) is a
  module even on a library base no file tells, and a weight average built in a subclass's `__init__` over its parts
  (`ExponentialMovingAverage(nn.Sequential(self.backbone, self.neck))`) copies placeholders (ZG105). A copy of a
  setting the registry built (`self.loss_cfg`) is none.
"""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found_in_package

REGISTRY = """
MODULE_BUILD_FUNCS = {}
"""

MODELS = """
from .registry import MODULE_BUILD_FUNCS


def build_model(args):
    build_func = MODULE_BUILD_FUNCS.get(args.modelname)
    model = build_func(args)
    return model


def load_model(path):
    return {"path": path, "kind": "settings"}
"""

LOADER = """
import torch

from .models import build_model, load_model


def load(args, path):
    model = build_model(args)
    model.load_state_dict(torch.load(path))
    return model


def read(path):
    model = load_model(path)
    model.update({"loaded": True})
    return model
"""


def test_a_registry_lookup_returned_by_a_model_factory_is_a_model(tmp_path: Path) -> None:
    files = {"registry.py": REGISTRY, "models.py": MODELS, "loader.py": LOADER}
    assert found_in_package(tmp_path, files, "loader.py", prefix="ZG1") == [("ZG108", 9)]


WRAPPED = """
import torch
from torch import nn
from timm.models import create_model


def validate(args):
    model = create_model(args.model)
    count = sum(p.numel() for p in model.parameters())
    if args.num_gpu > 1:
        model = nn.DataParallel(model, device_ids=list(range(args.num_gpu)))
    return count


def trainable(args):
    model = create_model(args.model)
    model = nn.DataParallel(model)
    return sum(p.requires_grad for p in model.parameters())
"""


def test_a_data_parallel_wrapper_bound_later_keeps_the_model(tmp_path: Path) -> None:
    assert found_in_package(tmp_path, {"validate.py": WRAPPED}, "validate.py", prefix="ZG1") == [("ZG102", 9)]


BASE = """
from mmengine.model import BaseModel as _BaseModel

from .registry import MODELS


class BaseModel(_BaseModel):
    def __init__(self, backbone, neck, loss):
        super().__init__()
        self.backbone = MODELS.build(backbone)
        self.neck = MODELS.build(neck)
        self.loss_cfg = loss

    def forward(self, inputs, mode="tensor"):
        return self.neck(self.backbone(inputs))
"""

MOCO = """
import copy

from torch import nn
from mmengine.model import ExponentialMovingAverage

from .base import BaseModel


class MoCo(BaseModel):
    def __init__(self, backbone, neck, loss, momentum=0.01):
        super().__init__(backbone, neck, loss)
        self.encoder_k = ExponentialMovingAverage(nn.Sequential(self.backbone, self.neck), momentum)


class Settings(BaseModel):
    def __init__(self, backbone, neck, loss):
        super().__init__(backbone, neck, loss)
        self.loss_k = copy.deepcopy(self.loss_cfg)
"""


def test_a_weight_average_over_registry_built_parts_copies_placeholders(tmp_path: Path) -> None:
    files = {"registry.py": "MODELS = None\n", "base.py": BASE, "moco.py": MOCO}
    assert found_in_package(tmp_path, files, "moco.py", prefix="ZG1") == [("ZG105", 13)]
