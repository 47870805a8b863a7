"""A model a function built, or took out of the engine that trained it, pickled whole.

vall-e's `export.py` takes `model = engine["model"].module.cpu()` (the model the DeepSpeed engine wraps) and saves it
with `torch.save(model, path)`: under ZeRO-3 its parameters are partitioned placeholders, so the file holds none of
the weights. The same for a model the function constructs. A model's `state_dict()` saved this way is ZG108's too.
"""

from __future__ import annotations

from zgen.model import check_source

from tests.model.package_check import TINY_NET

EXPORT = """
import torch
from torch import nn

from .train import load_engines


""" + TINY_NET + """

def export(path):
    engine = load_engines()
    model = engine["model"].module.cpu()
    model.symmap = {"a": 0}
    torch.save(model, path)


def export_built(path):
    model = Net()
    model.eval()
    torch.save(model, path)


def save_settings(path):
    settings = {"lr": 1e-3}
    torch.save(settings, path)


def save_names(names, path):
    state_dict = dict((n, 0) for n in names)
    torch.save(state_dict, path)
"""


def test_pickled_models():
    found = [(f.code, f.line) for f in check_source("export.py", EXPORT) if f.code.startswith("ZG1")]
    assert found == [("ZG108", 21), ("ZG108", 27)]
