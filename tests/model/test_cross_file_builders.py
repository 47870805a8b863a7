"""Facts a file learns from another file of its package: a module a factory function builds and hands straight to
a helper that zeroes its parameters (ZG103); a base class that builds its layers with the layer class its subclass
hands it (the model has parameters, so a random gate on it diverges, ZG202); a training function whose argument is
annotated with a plain class holding the model (`model: Forecast` ... `model.model`), whose early stop on this
rank's validation loss diverges (ZG204). And a model a function unpacks from what it was given (`model, loss =
modules`), whose state it copies (ZG108). Each against its look-alike."""

from __future__ import annotations

from package_check import WIDE_NET, found_in_package

LAYERS = """
import torch
from torch import nn


def conv_nd(dims, *args, **kwargs):
    if dims == 1:
        return nn.Conv1d(*args, **kwargs)
    return nn.Conv2d(*args, **kwargs)


def zero_module(module):
    for p in module.parameters():
        p.detach().zero_()
    return module


def named(module):
    module.tag = "out"
    return module
"""

BLOCK = """
from torch import nn
from .layers import conv_nd, {helper}


class Block(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.proj_out = {helper}(conv_nd(1, channels, channels, 1))

    def forward(self, x):
        return self.proj_out(x)
"""


def test_a_factory_built_conv_handed_to_a_zeroing_helper(tmp_path):
    files = {"layers.py": LAYERS, "block.py": BLOCK.format(helper="zero_module")}
    assert found_in_package(tmp_path, files, "block.py", prefix="ZG1") == [("ZG103", 9)]


def test_a_factory_built_conv_handed_to_a_helper_that_only_tags_it(tmp_path):
    files = {"layers.py": LAYERS, "block.py": BLOCK.format(helper="named")}
    assert found_in_package(tmp_path, files, "block.py", prefix="ZG1") == []


BASE = """
from torch import nn


class Model(nn.Module):
    def __init__(self, layer, **kwargs):
        super().__init__()
        dims = [kwargs.get("d", 512), 512, 4]
        self.layers = nn.ModuleList([])
        for i in range(len(dims) - 1):
            self.layers.append(layer(dims[i], dims[i + 1]))
"""

NETS = """
from torch import nn
from .base import Model


class Net(Model):
    def __init__(self, **kwargs):
        super().__init__({layer}, **kwargs)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
"""

AGENT = """
import torch
from .nets import Net


class Agent:
    def __init__(self, epsilon=0.1):
        self.model = Net(d=512)
        self.epsilon = epsilon

    def act(self, x):
        if torch.rand(1) < self.epsilon:
            return torch.randint(4, (1,))
        return self.model(x).argmax(-1)
"""


def test_a_base_building_its_layers_with_a_linear_its_subclass_hands_it(tmp_path):
    files = {"base.py": BASE, "nets.py": NETS.format(layer="nn.Linear"), "agent.py": AGENT}
    assert found_in_package(tmp_path, files, "agent.py", prefix="ZG2") == [("ZG202", 12)]


def test_a_base_building_its_layers_with_an_activation_its_subclass_hands_it(tmp_path):
    # (a parameterless layer class: the random gate skips no gather)
    files = {"base.py": BASE, "nets.py": NETS.format(layer="nn.Identity"), "agent.py": AGENT}
    assert found_in_package(tmp_path, files, "agent.py", prefix="ZG2") == []


FORECAST = """
from torch import nn


""" + WIDE_NET + """

class Forecast:
    def __init__(self):
        self.model = Net()
"""

TRAIN = """
import torch
from .forecast import Forecast


def validate(loader, model):
    total = 0.0
    with torch.no_grad():
        for x, y in loader:
            total += ((model(x) - y) ** 2).mean().item()
    return total


def train(model: Forecast, opt, loader, val_loader, epochs, patience=3):
    best, bad = float("inf"), 0
    for epoch in range(epochs):
        for x, y in loader:
            ((model.model(x) - y) ** 2).mean().backward()
            opt.step()
        valid = validate(val_loader, {handed})
        if valid < best:
            best, bad = valid, 0
        else:
            bad += 1
        if bad >= patience:
            break
"""


def test_an_early_stop_on_what_the_held_model_returned(tmp_path):
    files = {"forecast.py": FORECAST, "train.py": TRAIN.format(handed="model.model")}
    assert [code for code, _line in found_in_package(tmp_path, files, "train.py", prefix="ZG2")] == ["ZG204"]


def test_an_early_stop_on_what_a_helper_computed_without_the_model(tmp_path):
    files = {"forecast.py": FORECAST, "train.py": TRAIN.format(handed="None")}
    assert found_in_package(tmp_path, files, "train.py", prefix="ZG2") == []


UNPACKED = """
import copy


def train(modules, loader, opt):
    {targets} = modules
    best = None
    for x in loader:
        loss(model(x)).backward()
        opt.step()
        best = copy.deepcopy(model.state_dict())
    return best
"""


def test_a_model_unpacked_from_what_the_function_was_given(tmp_path):
    found = found_in_package(tmp_path, {"train.py": UNPACKED.format(targets="model, loss")}, "train.py", prefix="ZG1")
    assert [code for code, _line in found] == ["ZG108"]


def test_a_state_unpacked_from_what_the_function_was_given(tmp_path):
    # (`stats` is no model's name: its state is a record's)
    source = UNPACKED.format(targets="stats, loss").replace("model", "stats")
    assert found_in_package(tmp_path, {"train.py": source}, "train.py", prefix="ZG1") == []
