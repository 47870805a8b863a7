"""A method of a plain class (also a classmethod) given a built model hands it to a helper that pickles it, a
clone through a buffer (`torch.save(module, buf)`, `torch.load(buf)`): ZG108 at the call, as in a module-level
function (`handed._whole_trigger`: the model argument named in a call). Against a helper given a config."""

from __future__ import annotations

from package_check import found_in_package

UTILS = """
import io
import torch
from torch import nn


def clone_module(module: nn.Module) -> nn.Module:
    with io.BytesIO() as bytesio:
        torch.save(module, bytesio)
        bytesio.seek(0)
        return torch.load(bytesio)


def save_settings(cfg, path):
    torch.save(cfg, path)
"""

VALIDATOR = """
from torch import nn
from .utils import clone_module, save_settings


class Validator:
    @classmethod
    def fix(cls, module: nn.Module, **kwargs) -> nn.Module:
        module = clone_module(module)
        return module

    def keep(self, module: nn.Module, cfg):
        save_settings(cfg, "cfg.pt")
        return module
"""


def test_a_plain_class_method_hands_its_model_to_a_helper_that_pickles_it(tmp_path):
    found = found_in_package(tmp_path, {"utils.py": UTILS, "validator.py": VALIDATOR}, "validator.py", prefix="ZG1")
    assert ("ZG108", 9) in found


def test_a_config_handed_to_a_saving_helper_stays_clean(tmp_path):
    found = found_in_package(tmp_path, {"utils.py": UTILS, "validator.py": VALIDATOR}, "validator.py", prefix="ZG1")
    assert [f for f in found if f[1] == 13] == []
