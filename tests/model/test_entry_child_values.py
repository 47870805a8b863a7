"""Parameters read on the built model outside any forward, by a method the training loop calls: a method handing out
a starting value (`get_initial_state`: `initial` names a value, not an initialiser) and a child's parameter of any
registered name (`self.layers[i].coef`, not only `weight` and `bias`), also of a class of another file."""

from __future__ import annotations

from package_check import found, found_in_package, write_package

# A recurrent core with a learnt initial state; no forward reaches the method that hands it out.
CORE = """
import torch
from torch import nn


class Core(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.gru = nn.GRUCell(d, d)
        self.h0 = nn.Parameter(torch.zeros(d, 512))

    def get_initial_state(self, batch):
        return torch.tanh(self.h0).sum(-1).expand(batch, -1)

    def forward(self, x, h):
        return self.gru(x, h)
"""

# The same starting value read only in forward, and an initialiser by name: no read on the built model.
CORE_SAFE = """
import torch
from torch import nn


class Core(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.gru = nn.GRUCell(d, d)
        self.h0 = nn.Parameter(torch.zeros(d, 512))

    def initial_hidden(self, batch):
        return self.h0.sum(-1).expand(batch, -1)

    def initialize(self):
        nn.init.zeros_(self.h0)

    def forward(self, x):
        return self.gru(x, self.initial_hidden(x.shape[0]))
"""

LAYER = """
import torch
from torch import nn


def fit_coef(x, y):
    return torch.linalg.lstsq(x, y).solution


class Spline(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.coef = nn.Parameter(fit_coef(torch.randn(64, i), torch.randn(64, o)))

    def forward(self, x):
        return x @ self.coef
"""

# A regulariser the fit loop adds to the loss reads every layer's coefficients.
NET = """
import torch
from torch import nn
from .layer import Spline


class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.layers = nn.ModuleList([Spline(d, d) for _ in range(3)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def reg(self):
        total = 0.
        for i in range(len(self.layers)):
            total = total + torch.sum(torch.abs(self.layers[i].coef))
        return total

    def reg_items(self):
        return sum(layer.coef.abs().sum() for layer in self.layers)
"""

# The same reads inside forward (each layer called: its hook gathered it), and only its dtype outside.
NET_SAFE = """
import torch
from torch import nn
from .layer import Spline


class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.layers = nn.ModuleList([Spline(d, d) for _ in range(3)])

    def forward(self, x):
        for i in range(len(self.layers)):
            x = self.layers[i](x)
        return x

    def dtype_of(self):
        return self.layers[0].coef.dtype
"""


def test_initial_state_method_reads_outside_forward(tmp_path):
    path = write_package(tmp_path, {"core.py": CORE}) / "core.py"
    assert ("ZG109", 13) in found(path, "ZG1")


def test_initial_value_read_in_forward_is_fine(tmp_path):
    path = write_package(tmp_path, {"core.py": CORE_SAFE}) / "core.py"
    assert found(path, "ZG1") == []


def test_child_parameter_of_any_name_read_by_regulariser(tmp_path):
    got = found_in_package(tmp_path, {"layer.py": LAYER, "net.py": NET}, "net.py", prefix="ZG109")
    assert ("ZG109", 20) in got and ("ZG109", 24) in got


def test_child_parameter_in_forward_or_dtype_is_fine(tmp_path):
    assert found_in_package(tmp_path, {"layer.py": LAYER, "net.py": NET_SAFE}, "net.py", prefix="ZG1") == []
