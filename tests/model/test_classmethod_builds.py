"""Models a class builds through its own classmethods, and classes of other files however they are cased.

`cls(**config)` in a classmethod of a module class is an instance of that class, and so is what another classmethod
returns when it builds one (`model = cls.from_config(path)`), in either arm of a branch. Loading a state dict into it
afterwards writes into the placeholders `deepspeed.zero.Init` left once the constructor returned (ZG108). A classmethod
that returns a configuration builds no model, and a plain class's `cls(...)` is no module. A module class of another
file is one whatever its name's case (`xLSTMLarge(config)`); a plain class of that file (`xConfig`) is not.
"""

from __future__ import annotations

import textwrap

from tests.model.package_check import found_in_package
from zgen.model import check_source


def _found(source: str) -> list[tuple[str, int]]:
    found = check_source("model.py", textwrap.dedent(source))
    return sorted((f.code, f.line) for f in found if f.code.startswith("ZG1"))


HAZARD = """
import json
import os

import torch
from torch import nn


class Codec(nn.Module):
    def __init__(self, dim=512):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    @classmethod
    def from_config(cls, config_path):
        with open(config_path) as f:
            config = json.load(f)
        model = cls(**config)
        return model

    @classmethod
    def from_pretrained(cls, repo):
        if os.path.isdir(repo):
            model = cls.from_config(os.path.join(repo, "config.json"))
            state = torch.load(os.path.join(repo, "model.bin"), map_location="cpu")
        else:
            model = cls.from_config("config.json")
            state = torch.load("model.bin", map_location="cpu")
        model.load_state_dict(state)
        return model
"""


def test_a_model_built_by_a_classmethod_then_loaded_is_partitioned():
    assert _found(HAZARD) == [("ZG108", 29)]


LOOK_ALIKE = """
import json

import torch
from torch import nn


class Settings:
    def __init__(self, **values):
        self.values = values

    @classmethod
    def read(cls, path):
        with open(path) as f:
            return cls(**json.load(f))

    def load_state_dict(self, state):
        self.values.update(state)


class Codec(nn.Module):
    def __init__(self, dim=512):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    @classmethod
    def config_of(cls, path):
        with open(path) as f:
            return json.load(f)

    @classmethod
    def settings(cls, path):
        settings = Settings.read(path)
        settings.load_state_dict(cls.config_of(path))
        return settings
"""


def test_a_classmethod_returning_settings_builds_no_model():
    assert _found(LOOK_ALIKE) == []


MODEL = """
    from torch import nn


    class xLSTMLarge(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.embedding = nn.Embedding(config.vocab_size, config.dim)
            self.head = nn.Linear(config.dim, config.vocab_size)


    class xConfig:
        def __init__(self, **values):
            self.values = values

        def load_state_dict(self, state):
            self.values.update(state)
"""

LOADER = """
    import torch

    from .model import xConfig, xLSTMLarge


    def load_from_pretrained(path, config):
        model = xLSTMLarge(config)
        model.load_state_dict(torch.load(path))
        settings = xConfig(dim=4)
        settings.load_state_dict({"dim": 8})
        return model, settings
"""


def test_a_class_of_another_file_is_a_module_however_its_name_is_cased(tmp_path):
    found = found_in_package(tmp_path, {"model.py": MODEL, "loader.py": LOADER}, "loader.py", prefix="ZG1")
    assert found == [("ZG108", 9)]
