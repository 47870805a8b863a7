"""Module lists joined with `+`, checks in plain functions, and `typing.cast` (issue 20, blind28 misses).

* `nn.ModuleList([Block(c) for _ in range(n)] + [ResBlock(c) for _ in range(3)])` holds both lists' layers: a
  LayerDrop that skips one of them on a host random draw makes ranks run different layers (ZG202). Look-alike: the
  same loop skipping a layer by its index.
* A module-level function that raises on this rank's non-finite values stops the rank mid-pass when the training
  pass calls it (`check_loss(loss)` after the backward), or when it is handed the model and tests its gradients
  (`after_backward_checks(model)`, each rank's own shard under ZeRO-3): ZG204. Look-alike: the same check of an
  input that no pass calls.
* `cast(BaseModel, self.model).init_weights()` initialises the held model itself (ZG101).
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

LAYERS = """
import random

from torch import nn


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.fc = nn.Linear(c, c)

    def forward(self, x):
        return self.fc(x)


class Decoder(nn.Module):
    def __init__(self, c, n, layer_drop=0.1):
        super().__init__()
        self.layer_drop = layer_drop
        self.layers = nn.ModuleList([Block(c) for _ in range(n)] + [nn.Linear(c, c) for _ in range(3)])

    def forward(self, x):
        unused = []
        for i, layer in enumerate(self.layers):
            if self.training and i != 0 and {test}:
                unused.extend(list(layer.parameters()))
            else:
                x = layer(x)
        return x
"""


def _codes(source: str, prefix: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("m.py", textwrap.dedent(source)) if f.code.startswith(prefix)]


def test_a_layer_drop_over_joined_module_lists_skips_layers_per_rank():
    assert _codes(LAYERS.replace("{test}", "random.random() < self.layer_drop"), "ZG2") == [("ZG202", 25)]


def test_skipping_a_layer_of_joined_lists_by_its_index_is_the_same_on_every_rank():
    assert _codes(LAYERS.replace("{test}", "i % 4 == 3"), "ZG2") == []


CHECKS = """
import torch


def after_backward_checks(config, model):
    for name, param in model.named_parameters():
        grad = param.grad
        if torch.isnan(grad).any() or torch.isinf(grad).any():
            raise ValueError(f"gradient of {name} is not finite")


def check_inputs(x):
    if torch.isnan(x).any():
        raise ValueError("bad input")


def check_loss(loss):
    if not torch.isfinite(loss):
        raise FloatingPointError("loss is not finite")


def train(model, loader, opt):
    for x in loader:
        loss = model(x).sum()
        loss.backward()
        check_loss(loss)
        opt.step()
"""


def test_a_function_raising_on_this_ranks_values_in_the_pass_stops_one_rank():
    assert _codes(CHECKS, "ZG204") == [("ZG204", 8), ("ZG204", 18)]


CAST = """
from typing import cast

import torch


class Trainer:
    def __init__(self, model):
        self.model = model

    def reinit(self):
        with torch.no_grad():
            cast(torch.nn.Module, self.model).init_weights(buffer_device=None)
"""


def test_a_cast_model_is_the_model_itself():
    assert _codes(CAST, "ZG1") == [("ZG101", 13)]
