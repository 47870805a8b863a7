"""A local bound only to `range` or a progress bar's `trange`
(`range_fn = range if not verbose else tqdm.trange`) is a range: a loop over its call is counted like `range(...)`
(`counts._range_locals`). From blind21's descript-audio-codec `compress` (h-b21c)."""

from __future__ import annotations

from tests.model.package_check import found, write_package

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


def test_range_local_counted_by_data(tmp_path):
    package = write_package(tmp_path, {"local.py": LOCAL})
    assert found(package / "local.py", "ZG2") == [("ZG204", 15)]
