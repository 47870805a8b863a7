"""A module whose input mapping may carry precomputed features (`if "lafs0" not in data: feats =
self.extract_features(data["image0"])` / `else: lafs0 = data["lafs0"]`) runs the extractor only on ranks whose batch
lacks them (ZG203). A key tested but never read from the mapping (a flag a caller sets) decides nothing of the
module's own."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
from torch import nn


class Matcher(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, dim, 3), nn.ReLU(), nn.Conv2d(dim, dim, 3))
        self.head = nn.Linear(dim, dim)

    def extract_features(self, image):
        return self.backbone(image).flatten(2).mean(-1)

    def forward(self, data):
        if "feats0" not in data:
            feats = self.extract_features(data["image0"])
        else:
            feats = {precomputed}
        return self.head(feats)
"""


def zg2(precomputed: str) -> list[tuple[str, int]]:
    found = check_source("m.py", textwrap.dedent(SOURCE.format(precomputed=precomputed)))
    return [(f.code, f.line) for f in found if f.code.startswith("ZG2")]


def test_features_precomputed_on_some_ranks_skip_the_extractor():
    assert zg2('data["feats0"]') == [("ZG203", 15)]


def test_a_key_the_module_never_reads_is_the_callers_flag():
    assert zg2("self.head.weight.new_zeros(1, 4)") == []
