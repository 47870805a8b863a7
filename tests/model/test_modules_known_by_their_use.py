"""Modules and initialisers told by how the code uses them rather than by their names: a constructor argument the
module keeps and walks as only a module is walked (`self.qf = qf.to(device)` ... `self.qf.parameters()`), whose
deep copy duplicates the placeholders `zero.Init` left it when its own constructor returned; and an initialiser
picked from a registry (`func = WEIGHT_INIT_DICT[name]`) run over parameters that include the children's,
already partitioned in `__init__`. A constructor argument kept but never walked stays quiet, and so does an
initialiser writing a parameter the constructor itself set on a built child (`self.v.pos_embed =
nn.Parameter(torch.zeros(...))`): `zero.Init` partitioned the child's own parameters, not one set on it later."""

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


FRESH_POSITIONS = '''
import torch
from torch import nn
from timm.models.layers import trunc_normal_

from vit import VisionTransformer


class ASTModel(nn.Module):
    def __init__(self, num_patches, dim):
        super().__init__()
        self.v = VisionTransformer(dim)
        new_pos_embed = nn.Parameter(torch.zeros(1, num_patches + 2, dim))
        self.v.pos_embed = new_pos_embed
        trunc_normal_(self.v.pos_embed, std=.02)
        trunc_normal_(self.v.cls_token, std=.02)

    def forward(self, x):
        return self.v(x)
'''

VIT = '''
import torch
from torch import nn


class VisionTransformer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.pos_embed = nn.Parameter(torch.zeros(1, 198, dim))
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.head = nn.Linear(dim, 10)

    def forward(self, x):
        return self.head(x + self.pos_embed)
'''


def test_a_parameter_set_on_a_built_child_in_init_is_written_whole(tmp_path: Path) -> None:
    (tmp_path / "vit.py").write_text(VIT)
    path = tmp_path / "ast_models.py"
    path.write_text(FRESH_POSITIONS)
    assert found(path, "ZG103") == [("ZG103", 16)]
