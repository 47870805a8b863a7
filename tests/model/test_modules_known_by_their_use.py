"""Modules and initialisers told by how the code uses them rather than by their names: a constructor argument the
module keeps and walks as only a module is walked (`self.qf = qf.to(device)` ... `self.qf.parameters()`), whose
deep copy duplicates the placeholders `zero.Init` left it when its own constructor returned; and an initialiser
picked from a registry (`func = WEIGHT_INIT_DICT[name]`) run over parameters that include the children's,
already partitioned in `__init__`. A constructor argument kept but never walked, and a registry's callable handed
a value that is no parameter, stay quiet."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found

KEPT_AND_WALKED = '''
import copy

import torch
from torch import nn


class ImplicitQLearning(nn.Module):
    def __init__(self, qf, vf, optimizer_factory, scaler):
        super().__init__()
        self.qf = qf.to("cuda")
        self.q_target = copy.deepcopy(qf).requires_grad_(False)
        self.vf = vf.to("cuda")
        self.q_optimizer = optimizer_factory(self.qf.parameters())
        self.scaler = scaler
        self.scaler_copy = copy.deepcopy(scaler)

    def forward(self, obs):
        return self.vf(obs)
'''


def test_a_constructor_argument_kept_and_walked_as_a_module_then_deep_copied(tmp_path: Path) -> None:
    path = tmp_path / "iql.py"
    path.write_text(KEPT_AND_WALKED)
    assert found(path, "ZG105") == [("ZG105", 12)]


REGISTRY = '''
from torch import nn

WEIGHT_INIT_DICT = {"xavier_uniform": nn.init.xavier_uniform_}
ACTIVATION_DICT = {"relu": nn.ReLU}


class TransformerEncoder(nn.Module):
    def __init__(self, d, layers, weight_init_name="xavier_uniform"):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(d, d) for _ in range(layers)])
        self.act = ACTIVATION_DICT["relu"]()
        self._reset_parameters(weight_init_name)

    def _reset_parameters(self, weight_init_name):
        func = WEIGHT_INIT_DICT[weight_init_name]
        for p in self.parameters():
            if p.dim() > 1:
                func(p)

    def forward(self, x):
        for layer in self.layers:
            x = self.act(layer(x))
        return x
'''


def test_an_initialiser_picked_from_a_registry_over_the_children_parameters(tmp_path: Path) -> None:
    path = tmp_path / "transformer.py"
    path.write_text(REGISTRY)
    assert ("ZG103", 19) in found(path, "ZG103")
