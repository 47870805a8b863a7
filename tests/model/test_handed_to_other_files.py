"""A typed child handed to a function of another file that runs a non-forward method of it (tenth session, h-zg3r).

`embed_with(self.enc, x)` in a forward, with `def embed_with(model, x): return model.encode_text(x)` in `utils.py`:
the function's file cannot tell what `model` is, the caller can. The function's summary (`effects.CALLS`) names the
methods it runs on what it is given, also through the functions it hands it on to; the call is ZG303 where the
method computes with the child's own parameters."""

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

    def describe(self):
        return "encoder"

    def forward(self, x):
        return self.net(x)
"""

UTILS = """
def embed_with(model, x):
    return model.encode_text(x)

def embed_twice(model, x):
    return embed_with(model, x)

def name_of(model):
    return model.describe()

def run(model, x):
    return model(x)
"""


def _found(tmp_path, text: str) -> list[tuple[str, int]]:
    return found_in_package(tmp_path, {"nets.py": NETS, "utils.py": UTILS, "model.py": text}, "model.py")


HANDED = """
from torch import nn
from .nets import Encoder
from .utils import embed_twice, embed_with

class Top(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.enc = Encoder(dim)

    def forward(self, x):
        return embed_with(self.enc, x) + embed_twice(self.enc, x)

class Sampler:
    def __init__(self, dim):
        self.model = Encoder(dim)

    def sample(self, x):
        return embed_twice(self.model, x)
"""


def test_a_child_handed_to_another_files_function_that_runs_its_method(tmp_path):
    found = _found(tmp_path, HANDED)
    assert ("ZG303", 12) in found  # the forward hands the encoder on, one and two functions down
    assert ("ZG303", 19) in found  # a plain class's sampler hands the model it built


HANDED_SAFE = """
from torch import nn
from .nets import Encoder
from .utils import name_of, run

class Top(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.enc = Encoder(dim)

    def forward(self, x):
        print(name_of(self.enc))
        return run(self.enc, x)
"""


def test_a_method_computing_with_no_parameter_or_the_forward_is_clean(tmp_path):
    # `describe` reads no parameter; `run` calls the encoder through `__call__`, its hooks gather it
    assert [f for f in _found(tmp_path, HANDED_SAFE) if f[0] == "ZG303"] == []
