"""A plain class (a model wrapper's base) whose methods use `self.module` as a module (`self.module.state_dict()`,
`self.module.eval()`) without ever setting it holds the model a subclass of another file builds there: its `save`
reads the partitioned state (ZG108). An attribute so used but named as settings (`self.config.state_dict()`) is not a
model, nor is one the class sets itself to something else."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
import torch


class BaseModelClass:
    def __init__(self, adata=None):
        self.adata = adata
        self.is_trained_ = False

    def save(self, dir_path):
        state = self.{name}.state_dict()
        torch.save({{"model_state_dict": state}}, dir_path)

    def to_device(self, device):
        self.{name}.eval()
        self.{name}.to(device)
"""


def zg108(name: str) -> list[int]:
    found = check_source("base.py", textwrap.dedent(SOURCE.format(name=name)))
    return [f.line for f in found if f.code == "ZG108"]


def test_a_model_attribute_a_subclass_sets_is_saved_partitioned():
    assert zg108("module") == [11]


def test_a_settings_attribute_is_no_model():
    assert zg108("config") == []
