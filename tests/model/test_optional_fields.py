"""Optional fields of an input object.

`def forward(self, cond: Cond)` for a dataclass declaring `prompt_emb: Optional[Tensor] = None`: a local bound to
`cond.prompt_emb` is as optional as a parameter defaulting to `None`. A tower run only when the field was given is
skipped on ranks whose conditioning lacks it (ZG205). A field the class requires (no default) is always there.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source


def _found(source: str) -> list[tuple[str, int]]:
    found = check_source("model.py", textwrap.dedent(source))
    return sorted((f.code, f.line) for f in found if f.code.startswith("ZG2"))


SOURCE = """
from dataclasses import dataclass
from typing import Optional

import torch
from torch import nn


@dataclass
class Cond:
    speaker_emb: torch.Tensor
    prompt_emb: Optional[torch.Tensor] = None


class Resampler(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(1024, 8)
        self.proj = nn.Linear(1024, 1024)


class CondEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.spkr = nn.Linear(256, 1024)
        self.resampler = Resampler()
        self.voice = Resampler()

    def forward(self, cond: Cond):
        spkr = self.spkr(cond.speaker_emb)
        prompt = cond.prompt_emb
        if prompt is None:
            prompt = spkr[:, :0]
        else:
            prompt = self.resampler(prompt)
        speaker = cond.speaker_emb
        if speaker is None:
            speaker = spkr
        else:
            speaker = self.voice(speaker)
        return torch.cat([spkr, prompt, speaker], dim=1)
"""


def test_a_tower_run_only_on_an_optional_field_of_the_input_is_skipped_without_it():
    assert _found(SOURCE) == [("ZG205", 32)]
