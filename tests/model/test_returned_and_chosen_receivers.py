"""Children reached through a choice or a call's return (tenth session, h-zg3r).

`self.enc = encoder or Encoder(d)` holds one of the two, like `encoder if encoder else Encoder(d)`: an `Encoder`
when none is handed in. A parameter read on what a call hands back (`self.get_p().codebook`, `unwrap(self.p).codebook`,
`getattr(self.p, "module", self.p).codebook`) is the child's, read outside its forward, like `self.p.codebook`."""

from __future__ import annotations

from package_check import found_in_package

NETS = """
import torch
from torch import nn

class Encoder(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Parameter(torch.randn(dim, dim))
        self.net = nn.Linear(dim, dim)

    def encode_text(self, x):
        return self.net(x) @ self.proj

    def forward(self, x):
        return self.net(x)

class Proj(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.codebook = nn.Parameter(torch.randn(1024, d))
        self.scale = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x @ self.codebook.t()
"""


def _found(tmp_path, text: str) -> list[tuple[str, int]]:
    return found_in_package(tmp_path, {"nets.py": NETS, "model.py": text}, "model.py")


CHOSEN_BY_OR = """
from torch import nn
from .nets import Encoder

class Wrap(nn.Module):
    def __init__(self, dim, encoder=None):
        super().__init__()
        self.enc = encoder or Encoder(dim)
        self.proj = None or nn.Linear(dim, dim)

    def forward(self, x):
        return self.enc.encode_text(x) + x @ self.proj.weight
"""


def test_a_child_chosen_by_or_is_typed_by_its_construction(tmp_path):
    found = _found(tmp_path, CHOSEN_BY_OR)
    assert ("ZG303", 12) in found  # the encoder's non-forward method computes with its own projection
    assert ("ZG301", 12) in found  # the chosen Linear's weight, read without calling it


CHOSEN_BY_OR_CALLED = """
from torch import nn
from .nets import Encoder

class Wrap(nn.Module):
    def __init__(self, dim, encoder=None):
        super().__init__()
        self.enc = encoder or Encoder(dim)
        self.proj = None or nn.Linear(dim, dim)

    def forward(self, x):
        return self.enc(x) + self.proj(x) + self.proj.bias
"""


def test_a_child_chosen_by_or_and_called_is_clean(tmp_path):
    assert _found(tmp_path, CHOSEN_BY_OR_CALLED) == []  # run through `__call__`; a bias stays gathered


RETURNED = """
from torch import nn
from .nets import Proj

def unwrap(m):
    return getattr(m, "module", m)

class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.p = Proj(d)
        self.out = nn.Linear(d, d)

    def get_p(self):
        return self.p

    def forward(self, x):
        a = x @ self.get_p().codebook.t()
        b = x @ unwrap(self.p).codebook.t()
        c = x @ getattr(self.p, "module", self.p).codebook.t()
        return self.out(a + b + c)
"""


def test_a_parameter_read_on_what_a_call_returns(tmp_path):
    found = _found(tmp_path, RETURNED)
    assert {("ZG301", 18), ("ZG301", 19), ("ZG301", 20)} <= set(found)


RETURNED_SAFE = """
import torch
from torch import nn
from .nets import Proj

def unwrap(m):
    return getattr(m, "module", m)

class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.p = Proj(d)
        self.codebook = nn.Parameter(torch.randn(1024, d))

    def get_p(self):
        return self.p

    def me(self):
        return self

    def forward(self, x):
        own = x @ unwrap(self).codebook.t() + x @ self.me().codebook.t()
        return self.get_p()(own) * self.get_p().scale + self.get_p().codebook.shape[0]
"""


def test_own_parameters_and_small_or_sized_ones_on_a_returned_child_are_clean(tmp_path):
    # its own parameters (gathered by its own hook), the child run through `__call__`, a vector (kept gathered), a size
    assert [f for f in _found(tmp_path, RETURNED_SAFE) if f[0].startswith("ZG3")] == []
