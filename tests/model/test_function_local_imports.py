"""A helper a function imports in its own body (`from .checkpoint import load_state_dict` inside a hook's method)
is the function the name binds there: its summary (it loads the state of the module it is given, it deep-copies
it) is read at the call as for a helper the file imports at the top (`effects.resolve_function`). Against a helper
imported the same way that only logs the model."""

from __future__ import annotations

from package_check import found_in_package

CHECKPOINT = """
import copy


def load_state_dict(module, state_dict, strict=False):
    def load(m, sd):
        m.load_state_dict(sd, strict=strict)
    module.load_state_dict(state_dict, strict=strict)


def make_ema(model):
    return copy.deepcopy(model)


def describe(model):
    return type(model).__name__
"""

HOOK = """
import deepspeed
from torch import nn


class EMAHook:
    def __init__(self, model: nn.Module):
        self.ema_model = model

    def after_load_checkpoint(self, checkpoint):
        from .checkpoint import load_state_dict, describe
        load_state_dict(self.ema_model, checkpoint["state_dict"])
        return describe(self.ema_model)


def main(model, cfg):
    from .checkpoint import make_ema
    engine, *_ = deepspeed.initialize(model=model, config=cfg)
    return make_ema(engine.module)
"""


def test_a_helper_imported_inside_the_function_is_read_at_the_call(tmp_path):
    found = found_in_package(tmp_path, {"checkpoint.py": CHECKPOINT, "hook.py": HOOK}, "hook.py", prefix="ZG1")
    assert ("ZG108", 12) in found  # loads into the held model
    assert ("ZG105", 19) in found  # deep-copies the partitioned model


def test_a_helper_imported_inside_the_function_that_only_names_the_class_stays_clean(tmp_path):
    found = found_in_package(tmp_path, {"checkpoint.py": CHECKPOINT, "hook.py": HOOK}, "hook.py", prefix="ZG1")
    assert [f for f in found if f[1] == 13] == []
