"""A module-level name bound to a class (`MLP = MultiLayerPerceptron`, in the class's file, in a package's
`__init__.py` re-exporting it, or in the checked file) is that class wherever a constructor names it
(`program.skeleton` keeps the aliases, `Project._resolve` and `ModelIndex.qualify` follow them); and an `if` that
returns with no `else` has the rest of its block for its `else` in ZG205 (torchdrug's infograph, h-optin)."""

from __future__ import annotations

from tests.model.package_check import found, found_in_package, write_package

MLP = """
from torch import nn


class MultiLayerPerceptron(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.layers = nn.ModuleList()
        for h in hidden:
            self.layers.append(nn.Linear(d, h))
            d = h

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
"""

SOFTPLUS = """
from torch import nn


class ShiftedSoftplus(nn.Module):
    def forward(self, x):
        return nn.functional.softplus(x) - 0.69
"""

CONTRAST = """
from torch import nn
from pkg import layers


class Contrast(nn.Module):
    def __init__(self, model, d, n):
        super().__init__()
        self.model = model
        self.mlp = layers.MLP(d, [d] * n)

    def forward(self, graph, x, all_loss=None):
        out = self.model(graph, x)
        if all_loss is not None:
            y = self.mlp(out)
            all_loss = all_loss + y.sum()
        return out
"""


def test_alias_in_a_package_init_names_the_class(tmp_path):
    files = {
        "layers/common.py": MLP,
        "layers/__init__.py": "from .common import MultiLayerPerceptron\n\nMLP = MultiLayerPerceptron\n",
        "model.py": CONTRAST,
    }
    assert ("ZG205", 14) in found_in_package(tmp_path, files, "model.py", prefix="ZG2")


def test_alias_beside_the_class_in_the_checked_file(tmp_path):
    source = MLP + """

MLP = MultiLayerPerceptron


class Contrast(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.body = nn.Linear(d, d)
        self.mlp = MLP(d, [d, d])

    def forward(self, x, extra=None):
        h = self.body(x)
        if extra is not None:
            h = h + self.mlp(extra)
        return h
"""
    path = write_package(tmp_path, {"model.py": source}) / "model.py"
    assert ("ZG205", 30) in found(path, "ZG2")


def test_alias_imported_from_the_file_of_its_class(tmp_path):
    blocks = MLP + "\n\nEncoder = MultiLayerPerceptron\n"
    model = """
    from torch import nn
    from .blocks import Encoder


    class Model(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.text = nn.Linear(d, d)
            self.image = Encoder(d, [d, d])

        def forward(self, ids, image=None):
            h = self.text(ids)
            if image is not None:
                h = h + self.image(image)
            return h
    """
    assert ("ZG205", 14) in found_in_package(tmp_path, {"blocks.py": blocks, "model.py": model}, "model.py", prefix="ZG2")


def test_alias_of_a_parameter_free_module_gathers_nothing(tmp_path):
    model = """
    from torch import nn
    from pkg import layers


    class Net(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.body = nn.Linear(d, d)
            self.act = layers.SSP()

        def forward(self, x, extra=None):
            h = self.body(x)
            if extra is not None:
                h = h + self.act(extra)
            return h
    """
    files = {
        "layers/common.py": SOFTPLUS,
        "layers/__init__.py": "from .common import ShiftedSoftplus\n\nSSP = ShiftedSoftplus\n",
        "model.py": model,
    }
    assert found_in_package(tmp_path, files, "model.py", prefix="ZG2") == []


def test_an_early_return_running_the_same_tower_skips_nothing(tmp_path):
    source = MLP + """

class Contrast(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.mlp = MultiLayerPerceptron(d, [d, d])

    def forward(self, x, extra=None):
        if extra is not None:
            return self.mlp(x + extra)
        return self.mlp(x)
"""
    path = write_package(tmp_path, {"model.py": source}) / "model.py"
    assert found(path, "ZG2") == []


def test_an_early_return_before_a_tower_still_skips_it(tmp_path):
    source = MLP + """

class Contrast(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.body = MultiLayerPerceptron(d, [d, d])
        self.ctx = MultiLayerPerceptron(d, [d, d])

    def forward(self, x, extra=None):
        if extra is None:
            return self.body(x)
        return self.body(x) + self.ctx(extra)
"""
    path = write_package(tmp_path, {"model.py": source}) / "model.py"
    assert ("ZG205", 26) in found(path, "ZG2")


def test_an_early_return_running_the_tower_fewer_times_than_the_rest_skips_calls(tmp_path):
    # rectified_flow's value_flow: the explicit-target path returns after one model call, the rest calls it again
    source = MLP + """

class Flow(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.model = MultiLayerPerceptron(d, [d, d])

    def forward(self, x, target=None):
        if target is not None:
            return self.model(x) - target
        y = self.model(x)
        return self.model(y)
"""
    path = write_package(tmp_path, {"model.py": source}) / "model.py"
    assert ("ZG205", 25) in found(path, "ZG2")
