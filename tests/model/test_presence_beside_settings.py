"""A batch field's presence tested beside settings, the presence first (`if ACTION in batch and self.training:`,
`"audio" in batch and self.use_audio`): ZG203's text trigger reads it as it reads `if "audio" in batch:`. A key
tested against the model's own tuple of keys stays clean."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

M = """
import torch.nn as nn

AUDIO = "audio"

class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.use_audio = True
        self.keys = ("audio",)
        self.audio = nn.TransformerEncoder(nn.TransformerEncoderLayer(1024, 8), 4)
        self.video = nn.TransformerEncoder(nn.TransformerEncoderLayer(1024, 8), 4)

    def forward(self, batch):
        x = self.video(batch["video"])
        if {test}:
            x = x + self.audio(batch[{key}])
        return x
"""


def codes(test: str, key: str) -> list[str]:
    found = check_source("m.py", textwrap.dedent(M.replace("{test}", test).replace("{key}", key)))
    return [f.code for f in found if f.code.startswith("ZG2")]  # (the stacks copy their built layers: ZG105)


def test_a_fields_presence_before_a_setting_gates_the_tower():
    assert codes("AUDIO in batch and self.training", "AUDIO") == ["ZG203"]
    assert codes('self.use_audio and "audio" in batch and self.training', '"audio"') == ["ZG203"]


def test_a_key_of_the_models_own_keys_stays_clean():
    assert codes("self.training and AUDIO in self.keys", "AUDIO") == []
