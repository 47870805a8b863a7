"""A module whose child a function declared to return a module builds from layers of a package not read
(`self.project_in = build_block(...)` returning `ConvLayer(...)`) may own parameters: what the model holding it loads
in its own methods, after the child was built and partitioned, is told."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found

AUTOENCODER = '''
import torch
from torch import nn
from mylib.ops import ConvLayer, ResBlock


def build_block(cin, cout) -> nn.Module:
    if cin == cout:
        return ResBlock(cin)
    return ConvLayer(cin, cout)


class Encoder(nn.Module):
    def __init__(self, cin, width):
        super().__init__()
        self.project_in = build_block(cin, width)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.project_in(x))


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(x)


class AutoEncoder(nn.Module):
    def __init__(self, cin, width, path=None):
        super().__init__()
        self.encoder = Encoder(cin, width)
        if path is not None:
            self.load_model(path)

    def load_model(self, path):
        self.load_state_dict(torch.load(path, map_location="cpu")["state_dict"])


class Gated(nn.Module):
    def __init__(self, path=None):
        super().__init__()
        self.gate = Gate()
        if path is not None:
            self.load_state_dict(torch.load(path))
'''


def test_a_load_into_children_a_factory_built_is_told(tmp_path: Path) -> None:
    path = tmp_path / "ae.py"
    path.write_text(AUTOENCODER)
    # (the gate holds only an activation: nothing to load into)
    assert found(path, "ZG108") == [("ZG108", 40)]
