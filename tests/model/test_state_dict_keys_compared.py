"""A helper that compares the names a checkpoint loaded with each submodule's state dict (`loaded.issuperset(
module.state_dict())`, `set(model.state_dict())`) reads keys, not values: handing it the built model reads no
partitioned placeholder. A helper that saves the state dict does (ZG108 at the call)."""

from __future__ import annotations

import textwrap

from package_check import TINY_NET

from zgen.model import check_source

SOURCE = """
import torch
from torch import nn


""" + TINY_NET + """

def mark_loaded(model, loaded_keys):
    done = {{}}
    for name, module in model.named_modules():
        keys = {{k[len(name) + 1:] for k in loaded_keys if k.startswith(name)}}
        done[name] = {compare}
    return done


def load(path):
    model = Net()
    engine = deepspeed.initialize(model=model)[0]
    return mark_loaded(engine.module, torch.load(path).keys())
"""


def zg108(compare: str) -> list[int]:
    found = check_source("load.py", textwrap.dedent(SOURCE.format(compare=compare)))
    return [f.line for f in found if f.code == "ZG108"]


def test_keys_compared_as_sets_read_no_values():
    assert zg108("keys.issuperset(module.state_dict())") == []
    assert zg108("set(module.state_dict()) <= keys") == []


def test_a_state_dict_saved_reads_the_values():
    assert zg108("torch.save(module.state_dict(), name)") == [19, 26]
