"""Items a mask of values keeps, and whether a submodule found any.

`boxes[scores > t]`, `x[labels == c]` and `x[keep]` for `keep = (scores > 0) & ~done` keep as many items as this rank's
values pass the test. A loop over them that runs a submodule per item runs it a different number of times on each rank
(ZG203), as a loop over `mask.nonzero()` does. The same selection run through a submodule once, a mask that only
weights values, and an index by positions or by a setting decide nothing.

A test of whether what a submodule returned holds anything (`len(coords) > 0`, `len(found) == 0`) decides on this
rank's detections (ZG203/ZG204). How many values a call hands back (`len(outputs) > 1`) is fixed by the code.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source


def _found(source: str, prefix: str = "ZG2") -> list[tuple[str, int]]:
    found = check_source("model.py", textwrap.dedent(source))
    return sorted((f.code, f.line) for f in found if f.code.startswith(prefix))


_LAYERS = """
import torch
from torch import nn


def tower():
    return nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024))
"""

HAZARDS = _LAYERS + """

class Refiner(nn.Module):
    def __init__(self):
        super().__init__()
        self.detect = tower()
        self.refine = tower()

    def forward(self, x):
        boxes = self.detect(x)
        kept = x[boxes[:, 0] > 0.5]
        out = []
        for item in kept:
            out.append(self.refine(item))
        return out


class Masked(nn.Module):
    def __init__(self):
        super().__init__()
        self.refine = tower()

    def forward(self, x, scores, done):
        keep = (scores > 0) & ~done
        return [self.refine(row) for row in x[keep]]


class Restorer:
    def __init__(self):
        self.detector = tower()
        self.restorer = tower()

    def enhance(self, image):
        scores = self.detector(image)
        faces = image[scores.sigmoid() >= 0.9]
        return [self.restorer(face) for face in faces]
"""


def test_a_loop_over_the_items_a_mask_keeps_runs_the_submodule_per_rank():
    assert _found(HAZARDS) == [("ZG203", 20), ("ZG203", 32), ("ZG203", 43)]


LOOK_ALIKES = _LAYERS + """

class Once(nn.Module):
    def __init__(self):
        super().__init__()
        self.detect = tower()
        self.refine = tower()

    def forward(self, x):
        boxes = self.detect(x)
        kept = x[boxes[:, 0] > 0.5]
        return self.refine(kept)


class Weighted(nn.Module):
    def __init__(self):
        super().__init__()
        self.refine = tower()

    def forward(self, x, lengths):
        mask = lengths > 0
        x = x * mask.unsqueeze(-1)
        return [self.refine(row) for row in x]


class Positions(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.n = n
        self.refine = tower()

    def forward(self, x):
        return [self.refine(row) for row in x[: self.n]]
"""


def test_a_selection_run_once_a_weighting_mask_and_an_index_by_position_decide_nothing():
    assert _found(LOOK_ALIKES) == []


EMPTINESS = _LAYERS + """

class Finder(nn.Module):
    def __init__(self):
        super().__init__()
        self.score = tower()

    def forward(self, x):
        return self.score(x)

    def forward_test(self, x):
        h = self.score(x)
        return h, torch.nonzero(h > 0.5)


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.finder = Finder()
        self.refine = tower()

    def forward(self, x):
        info = self.finder.forward_test(x)
        feats, coords = info
        if len(coords) > 0:
            return self.refine(feats)
        return feats

    def predict(self, x):
        found = self.finder(x)
        if len(found) == 0:
            return None
        return self.refine(found)

    def levels(self, x):
        outputs = self.finder.forward_test(x)
        if len(outputs) > 1:
            return self.refine(outputs[0])
        return outputs
"""


def test_whether_a_submodule_found_anything_decides_per_rank_but_how_many_values_it_returns_does_not():
    assert _found(EMPTINESS) == [("ZG203", 32), ("ZG204", 38)]
