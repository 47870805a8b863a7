"""A model built by a builder a decorator was handed (`model = model_func(**kwargs)` in the wrapper of
`@pretrained_model(...)`) and then loaded with a checkpoint: under `zero.Init` the load copies into placeholders. A
method's value of the same name (`self.model_fn(x)`) is a call of the object, no construction."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found

DECORATED = '''
import torch


def pretrained_model(checkpoints):
    def inner(model_func):
        def model_def(pretrained=False, checkpoint=None, **kwargs):
            state_dict = torch.load(checkpoints[checkpoint], map_location="cpu") if pretrained else None
            model = model_func(**kwargs)
            if pretrained:
                model.load_state_dict(state_dict["model_state"])
            return model
        return model_def
    return inner


class Runner:
    def __init__(self, model_fn):
        self.model_fn = model_fn

    def run(self, x, state):
        model = self.model_fn(x)
        model.load_state_dict(state)
        return model
'''


def test_a_model_a_builder_held_in_a_variable_built_then_loaded(tmp_path: Path) -> None:
    path = tmp_path / "hub.py"
    path.write_text(DECORATED)
    assert found(path, "ZG108") == [("ZG108", 11)]
