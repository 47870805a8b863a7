"""An optional input tested through a method of the class that says whether a value was given (`if
self._has(text):`, a `@staticmethod exists(v)` called as `self.exists(ctx)`; ZG205's presence helpers): a tower runs
on some ranks only. The same method tested on a setting (`self.exists(self.ctx_enc)`) decides nothing per rank."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

M = """
import torch.nn as nn

class M(nn.Module):
    def __init__(self, use_ctx=True):
        super().__init__()
        self.ctx_enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(1024, 8), 4) if use_ctx else None
        self.body = nn.Linear(1024, 1024)

    {helper}

    def forward(self, x, ctx=None):
        if {test}:
            x = x + self.ctx_enc(ctx)
        return self.body(x)
"""

METHOD = "def _has(self, v):\n        return v is not None"
STATIC = "@staticmethod\n    def exists(v):\n        return v is not None"


def codes(helper: str, test: str) -> list[str]:
    source = M.replace("{helper}", helper).replace("{test}", test)
    return [f.code for f in check_source("m.py", textwrap.dedent(source)) if f.code.startswith("ZG2")]  # (not ZG105)


def test_an_input_tested_by_a_presence_method_gates_a_tower():
    assert codes(METHOD, "self._has(ctx)") == ["ZG205"]
    assert codes(STATIC, "self.exists(ctx)") == ["ZG205"]


def test_a_presence_method_on_a_setting_decides_nothing_per_rank():
    assert codes(STATIC, "self.exists(self.ctx_enc)") == []
    assert codes(METHOD, "self._has(self.ctx_enc)") == []
