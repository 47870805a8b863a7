"""A ModuleDict member picked by a distinct item of a collection the forward was given (`for name in
set(adapter_names): self.lora_A[name](x)`): per-sample adapter or task names, deduplicated; which modules run is
this rank's batch. Against keys from the module's own settings, a list walked as given, a default the signature
fixes, or positions in a ModuleList."""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

NET = """
import torch
from torch import nn


class Adapters(nn.Module):
    def __init__(self, names=("a", "b"), levels=4):
        super().__init__()
        self.names = list(names)
        self.lora = nn.ModuleDict({{n: nn.Linear(512, 512) for n in names}})
        self.levels = nn.ModuleList([nn.Linear(512, 512) for _ in range(levels)])

    def forward(self, x, {signature}):
        out = x
{body}
        return out
"""


def codes(signature: str, body: str) -> list[str]:
    source = NET.format(signature=signature, body=textwrap.indent(textwrap.dedent(body), " " * 8))
    return sorted(f.code for f in check_source("m.py", source) if f.code.startswith("ZG2"))


HAZARDS = {
    "each-distinct-name-of-the-batch": ("adapter_names=None", """
        for name in set(adapter_names):
            out = out + self.lora[name](x)
    """),
    "through-a-local-and-a-bound-module": ("adapter_names=None", """
        unique = sorted(set(adapter_names))
        for i, name in enumerate(unique):
            lora = self.lora[name]
            out = out + lora(x)
    """),
    "a-name-taken-out-of-the-keyword-arguments": ("**kwargs", """
        names = kwargs.pop("adapter_names", None)
        for name in set(names):
            if name not in self.lora.keys():
                continue
            out = out + self.lora[name](x)
    """),
}


@pytest.mark.parametrize("case", sorted(HAZARDS))
def test_hazard_is_found(case):
    signature, body = HAZARDS[case]
    assert codes(signature, body) == ["ZG203"], case


LOOK_ALIKES = {
    "the-modules-own-names": ("adapter_names=None", """
        for name in self.names:
            out = out + self.lora[name](x)
    """),
    "names-the-signature-fixes": ('names=("a", "b")', """
        for name in names:
            out = out + self.lora[name](x)
    """),
    "a-list-of-names-walked-as-given": ("names=None", """
        for name in names:
            out = out + self.lora[name](x)
    """),
    "distinct-positions-in-a-module-list": ("layer_ids=None", """
        for i in set(layer_ids):
            out = out + self.levels[i](x)
    """),
    "positions-in-a-module-list": ("layer_ids=None", """
        for i in layer_ids:
            out = out + self.levels[i](x)
    """),
    "features-zipped-with-the-modules-own-levels": ("feats=None", """
        for level, feat in zip(self.levels, feats):
            out = out + level(feat)
    """),
}


@pytest.mark.parametrize("case", sorted(LOOK_ALIKES))
def test_look_alike_is_clean(case):
    signature, body = LOOK_ALIKES[case]
    assert codes(signature, body) == [], case
