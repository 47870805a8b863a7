"""A class with no base of its own (`class CodecMixin:`) whose heirs in the package's other files are module classes
is a mixin of modules: its `self` is the module it is mixed into, so a loop counted by this rank's data calling a
step those heirs define (`self.encode(chunk)`) runs their submodules as often as the data says
(`index._mixed_into_modules`, `runs._package_heirs`). A local bound only to `range` or a progress bar's `trange`
(`range_fn = range if not verbose else tqdm.trange`) is a range: a loop over its call is counted like `range(...)`
(`counts._range_locals`). From blind21's descript-audio-codec `compress` (h-b21c)."""

from __future__ import annotations

from tests.model.package_check import found, write_package

BASE = """
import torch
import tqdm


class CodecMixin:
    def compress(self, audio, hop=100, verbose=False):
        nt = audio.shape[-1]
        range_fn = range if not verbose else tqdm.trange
        codes = []
        for i in range_fn(0, nt, hop):
            codes.append(self.encode(audio[..., i:i + hop]))
        return torch.cat(codes, -1)


class PadMixin:
    def pad_all(self, audio, hop=100):
        nt = audio.shape[-1]
        return [self.pad_chunk(audio[..., i:i + hop]) for i in range(0, nt, hop)]


class Configurable:
    def run_all(self, audio, hop=100):
        nt = audio.shape[-1]
        return [self.encode(audio[..., i:i + hop]) for i in range(0, nt, hop)]


class Tool:
    def run(self, audio, hop=100):
        nt = audio.shape[-1]
        return [self.encode(audio[..., i:i + hop]) for i in range(0, nt, hop)]
"""

MODEL = """
import torch
from torch import nn
from .base import CodecMixin, Configurable, PadMixin, Tool


class Codec(nn.Module, CodecMixin, PadMixin, Configurable):
    def __init__(self):
        super().__init__()
        self.enc = nn.Conv1d(1, 512, 3)
        self.width = 4

    def encode(self, x):
        return self.enc(x)

    def pad_chunk(self, x):
        return torch.nn.functional.pad(x, (0, self.width))

    def forward(self, x):
        return self.encode(x)


class Worker(Tool):
    def encode(self, x):
        return x * 2


class Learner(Configurable):
    def __init__(self, model):
        self.model = model

    def encode(self, x):
        return self.model(x)
"""

LOCAL = """
import tqdm
from torch import nn


class Codec(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Conv1d(1, 512, 3)
        self.n_chunks = 4

    def compress(self, audio, hop=100, verbose=False):
        n = audio.shape[-1]
        range_fn = range if not verbose else tqdm.trange
        return [self.enc(audio[..., i:i + hop]) for i in range_fn(0, n, hop)]

    def fixed(self, audio, verbose=False):
        range_fn = range if not verbose else tqdm.trange
        return [self.enc(audio) for _ in range_fn(self.n_chunks)]
"""


def test_mixin_loop_counted_by_data_runs_heirs_step(tmp_path):
    package = write_package(tmp_path, {"base.py": BASE, "model.py": MODEL})
    assert ("ZG204", 11) in found(package / "base.py", "ZG2")


def test_mixin_step_running_no_submodule_and_plain_heirs_stay_clean(tmp_path):
    package = write_package(tmp_path, {"base.py": BASE, "model.py": MODEL})
    assert [line for _code, line in found(package / "base.py", "ZG2")] == [11]
    assert found(package / "model.py", "ZG2") == []


def test_range_local_counted_by_data(tmp_path):
    package = write_package(tmp_path, {"local.py": LOCAL})
    assert found(package / "local.py", "ZG2") == [("ZG204", 15)]
