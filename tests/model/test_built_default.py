"""A member bound to the caller's module or else a default built here (`default(mel_spec, MelSpec())`, `enc if enc
is not None else Encoder(d)`, `enc or Encoder(d)`) is of the class built: a module handed in stands in for the
default. So a default with no parameters (a feature extractor holding only a buffer, f5_tts's `MelSpec`) makes a
member that gathers nothing, and a data-dependent call of it is no hang; a default that owns parameters still counts
(`members._FactsReader.either`; h-kind)."""

from __future__ import annotations

import pytest

from tests.model.package_check import found, write_package

UTIL = """
def exists(v):
    return v is not None


def default(v, d):
    return v if exists(v) else d
"""

LAYERS = """
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        return self.proj(x)


class MelSpec(nn.Module):
    def __init__(self, n_fft=1024):
        super().__init__()
        self.n_fft = n_fft
        self.register_buffer("window", torch.hann_window(n_fft), persistent=False)

    def forward(self, wav):
        return torch.stft(wav, self.n_fft, window=self.window, return_complex=True).abs()
"""

MODEL = """
from torch import nn
from .layers import Encoder, MelSpec
from .util import default


def pick(v, d):
    return v or d


class Model(nn.Module):
    def __init__(self, d, front: nn.Module | None = None):
        super().__init__()
        {bind}
        self.out = nn.Linear(d, d)

    def forward(self, x):
        if {test}:
            x = self.front(x)
        return self.out(x)
"""

BINDINGS = [
    "self.front = default(front, {built})",  # a function of another file handing back one of its arguments
    "self.front = pick(front, {built})",  # one of this file
    "self.front = front if front is not None else {built}",
    "self.front = front or {built}",
    "made = default(front, {built})\n        self.front = made",  # through a local
]
TESTS = ["x.sum() > 0", "x.ndim == 2"]  # a value of this rank's data; the kind of input given (`taint._kind_test`)


def _check(tmp_path, bind: str, test: str) -> list[tuple[str, int]]:
    files = {"util.py": UTIL, "layers.py": LAYERS, "model.py": MODEL.format(bind=bind, test=test)}
    return found(write_package(tmp_path, files) / "model.py", "ZG2")


@pytest.mark.parametrize("test", TESTS)
@pytest.mark.parametrize("bind", BINDINGS)
def test_a_default_that_owns_parameters_still_counts(tmp_path, bind, test):
    assert [code for code, _ in _check(tmp_path, bind.format(built="Encoder(d)"), test)] == ["ZG203"]


@pytest.mark.parametrize("test", TESTS)
@pytest.mark.parametrize("bind", BINDINGS)
def test_a_default_holding_only_a_buffer_gathers_nothing(tmp_path, bind, test):
    assert _check(tmp_path, bind.format(built="MelSpec()"), test) == []


def test_a_handed_module_with_no_default_built_may_own_parameters(tmp_path):
    # no default built here: the caller's module is of a class we cannot tell, and may own parameters
    assert [code for code, _ in _check(tmp_path, "self.front = default(front, None)", "x.sum() > 0")] == ["ZG203"]


PLACEHOLDERS = """
from torch import nn
from .util import default


class PassThrough(nn.Module):
    def forward(self, x):
        return x


class Block(nn.Module):
    def __init__(self, d, front=None):
        super().__init__()
        self.main = nn.Linear(d, d)
        {bind}

    def forward(self, x):
        if x.sum() > 0:
            x = self.front(x)
        return self.main(x)
"""


@pytest.mark.parametrize(
    "bind", ["self.front = front if front else nn.Identity()", "self.front = default(front, PassThrough())"]
)
def test_a_default_that_does_nothing_leaves_the_handed_module_unknown(tmp_path, bind):
    # `skip if skip else nn.Identity()` (k_diffusion's residual block, handed a conv by its subclass): the default is
    # a placeholder for no module, not a stand-in for what the caller hands, which may own parameters
    files = {"util.py": UTIL, "model.py": PLACEHOLDERS.format(bind=bind)}
    assert [code for code, _ in found(write_package(tmp_path, files) / "model.py", "ZG2")] == ["ZG203"]
