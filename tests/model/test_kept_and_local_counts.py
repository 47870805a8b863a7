"""Loops counted by this rank's data through a local or through `self` (`analysis/counts.py`, ZG204): a helper
counting blocks from a length its caller hands it through a local (`num_block = (n + bs - 1) // bs`), and a tile loop
counted by the extent of an input another method kept on `self` (`self.img = img.unsqueeze(0)`); against counts made
from settings, a buffer the class makes itself, and a tensor handed to the constructor."""

from __future__ import annotations

from package_check import Q_NETS, found_in_package

SPLIT = """
import torch
from .nets import QNet


class Evaluator:
    def __init__(self, d, test_bs, steps):
        self.model = QNet(d, 4)
        self.test_bs = test_bs
        self.steps = steps

    def _split_predict(self, x, batch_size):
        parts = x.split(self.test_bs)
        num_block = (batch_size + self.test_bs - 1) // self.test_bs
        res = []
        for i in range(num_block):
            res.append(self.model(parts[i]))
        return torch.cat(res)

    def eval_batch(self, x):
        return self._split_predict(x, {handed})
"""


def test_helper_counting_through_a_local_a_handed_batch_size(tmp_path):
    files = {"nets.py": Q_NETS, "evaluate.py": SPLIT.format(handed="len(x)")}
    assert ("ZG204", 16) in found_in_package(tmp_path, files, "evaluate.py", prefix="ZG2")


def test_helper_counting_through_a_local_a_setting_is_clean(tmp_path):
    files = {"nets.py": Q_NETS, "evaluate.py": SPLIT.format(handed="self.steps")}
    assert found_in_package(tmp_path, files, "evaluate.py", prefix="ZG2") == []


TILES = """
import math
import torch
from .nets import QNet


class Upsampler:
    def __init__(self, d, tile, anchors):
        self.model = QNet(d, 4)
        self.tile = tile
        self.anchors = anchors
        self.bank = torch.zeros(tile, d)

    def pre_process(self, img):
        img = torch.from_numpy(img).float()
        self.img = img.unsqueeze(0)

    def tile_process(self):
        batch, channel, height, width = {kept}.shape
        tiles = math.ceil(width / self.tile)
        for x in range(tiles):
            self.out = self.model({kept}[..., x * self.tile:(x + 1) * self.tile])

    def enhance(self, img):
        self.pre_process(img)
        self.tile_process()
        return self.out
"""


def test_tiles_of_an_input_kept_by_another_method(tmp_path):
    files = {"nets.py": Q_NETS, "upsample.py": TILES.format(kept="self.img")}
    assert ("ZG204", 21) in found_in_package(tmp_path, files, "upsample.py", prefix="ZG2")


def test_tiles_of_what_the_constructor_keeps_are_clean(tmp_path):
    for kept in ("self.anchors", "self.bank"):
        files = {"nets.py": Q_NETS, "upsample.py": TILES.format(kept=kept)}
        assert found_in_package(tmp_path, files, "upsample.py", prefix="ZG2") == [], kept
