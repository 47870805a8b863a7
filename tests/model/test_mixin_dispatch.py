"""A plain mixin's `self` is an instance of the module class deriving from it (`script.dispatched_reach`,
`reach.method_targets`): `self.encode(x)` in `CodecMixin.compress`, a method only `DAC(nn.Module, CodecMixin)` of
another file defines, runs the module's submodules; a loop counted by this rank's input around it runs them as often
as the input is long (ZG204). Against a loop over a setting, and a subclass method that runs no submodule."""

from __future__ import annotations

from package_check import Q_NETS, found_in_package

CODEC = """
import torch


class CodecMixin:
    def compress(self, signal, hop):
        nt = signal.shape[-1]
        codes = []
        for i in range({count}):
            codes.append(self.{method}(signal[..., i:i + hop]))
        return torch.cat(codes, -1)
"""

DAC = """
import torch
from torch import nn
from .nets import QNet
from .codec import CodecMixin


class DAC(nn.Module, CodecMixin):
    def __init__(self, d):
        super().__init__()
        self.encoder = QNet(d, d)
        self.scale = 2.0

    def encode(self, x):
        return self.encoder(x)

    def rescale(self, x):
        return x * self.scale

    def forward(self, x):
        return self.encoder(x)
"""


def _found(tmp_path, count: str, method: str) -> list[tuple[str, int]]:
    files = {"nets.py": Q_NETS, "codec.py": CODEC.format(count=count, method=method), "dac.py": DAC}
    return found_in_package(tmp_path, files, "codec.py", prefix="ZG2")


def test_mixin_loop_over_the_input_length_runs_the_subclass_encoder(tmp_path):
    assert ("ZG204", 9) in _found(tmp_path, "0, nt, hop", "encode")


def test_mixin_loop_over_a_setting_is_clean(tmp_path):
    assert _found(tmp_path, "self.n_chunks", "encode") == []


def test_mixin_loop_calling_a_method_that_runs_no_submodule_is_clean(tmp_path):
    assert _found(tmp_path, "0, nt, hop", "rescale") == []
