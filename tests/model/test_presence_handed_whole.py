"""A field's presence in the input mapping gates a call handed the whole mapping.

`if "image" in batch: h = h + self.encode_image(batch)`: the callee reads `batch["image"]` itself, so a rank whose
batch lacks the field skips the image tower that another rank runs (ZG203). The same holds for
`batch.get("image") is not None`. Look-alikes: the gated call runs no submodule (a logger handed the batch), the field
is only moved (`batch.pop("labels")`), a call given every field unpacked (`model(**batch)`) runs whatever the batch
holds, gated or not, and outside model code a mapping handed on whole is as often one of loaders or settings
(`if "val" in data: evaluate(model, data)`), the same on every rank: there the field must go into the call itself.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

HAZARD = """
import torch
from torch import nn


class MultiModal(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.image_encoder = nn.Linear(d, d)
        self.text_encoder = nn.Linear(d, d)

    def encode_image(self, batch):
        return self.image_encoder(batch["image"])

    def forward(self, batch):
        h = self.text_encoder(batch["text"])
        if "image" in batch:
            h = h + self.encode_image(batch)
        if batch.get("audio") is not None:
            h = h + self.encode_image(batch)
        return h
"""

SAFE = """
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.text_encoder = nn.Linear(d, d)

    def log_meta(self, batch):
        print(batch["meta"])

    def forward(self, batch):
        if "meta" in batch:
            self.log_meta(batch)
        if "labels" in batch:
            labels = batch.pop("labels")
        return self.text_encoder(batch["text"])


def train_step(model, batch):
    if "labels" in batch:
        out = model(**batch)
    else:
        out = model(**batch)
    return out


def evaluate(model, data):
    if "val" in data:
        return run_validation(model, data)
    return None


def run_validation(model, data):
    return [model(x) for x in data["val"]]
"""


def _found(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("model.py", textwrap.dedent(source)) if f.code.startswith("ZG2")]


def test_a_present_field_gating_a_call_handed_the_whole_mapping_diverges():
    assert _found(HAZARD) == [("ZG203", 17), ("ZG203", 19)]


def test_loggers_moved_fields_and_unpacked_calls_stay_clean():
    assert _found(SAFE) == []
