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


# The same mixin walking `self.modules()` is a mixin of modules (`index.module_mixin`), read as a module class: its
# `self.encode(x)` still dispatches to the module class of another file deriving from it (`runs.HelperRuns`).
MODULES_WALK = """

    def reset_caches(self):
        for m in self.modules():
            m.cache = None
"""


def _found_walking(tmp_path, count: str, method: str) -> list[tuple[str, int]]:
    codec = CODEC.format(count=count, method=method) + MODULES_WALK
    files = {"nets.py": Q_NETS, "codec.py": codec, "dac.py": DAC}
    return found_in_package(tmp_path, files, "codec.py", prefix="ZG2")


def test_module_mixin_loop_over_the_input_length_runs_the_subclass_encoder(tmp_path):
    assert ("ZG204", 9) in _found_walking(tmp_path, "0, nt, hop", "encode")


def test_module_mixin_loop_over_a_setting_is_clean(tmp_path):
    assert _found_walking(tmp_path, "self.n_chunks", "encode") == []


# A mixin's `self.model`, set only by the module classes of the package deriving from it (`own.mixin_heirs`), its
# loop over ranges a file function splits this rank's batch into, walked through a progress bar written over lines.
CACHED = """
import torch
import tqdm


def _batch_size(feature):
    return feature["ids"].shape[0]


def _ranges(feature, size):
    n = _batch_size(feature)
    return [(b, min(b + size, n)) for b in range(0, n, size)]


class CachedMixin:
    def embed(self, feature, begin, end):
        return self.{runner}(feature["ids"][begin:end])

    def embed_iter(self, feature, ranges=None):
        if ranges is None:
            ranges = _ranges(feature, self.mini)
        for i, (begin, end) in enumerate(
            tqdm.tqdm(
                ranges,
                desc="embed",
            )
        ):
            yield self.embed(feature, begin, end)
"""

LOSS = """
from torch import nn
from .nets import QNet
from .cached import CachedMixin


def scale(x):
    return x * 2


class CachedLoss(CachedMixin, nn.Module):
    def __init__(self, model: QNet, mini):
        super().__init__()
        self.model = model
        self.mini = mini
        self.sim = scale

    def forward(self, feature):
        return list(self.embed_iter(feature))
"""


def _found_cached(tmp_path, runner: str) -> list[tuple[str, int]]:
    files = {"nets.py": Q_NETS, "cached.py": CACHED.format(runner=runner), "loss.py": LOSS}
    return found_in_package(tmp_path, files, "cached.py", prefix="ZG2")


def test_mixin_attribute_set_by_the_deriving_module_runs_per_range(tmp_path):
    assert ("ZG204", 22) in _found_cached(tmp_path, "model")


def test_mixin_attribute_holding_a_function_is_clean(tmp_path):
    assert _found_cached(tmp_path, "sim") == []
