"""`flatten_parameters()` of a child LSTM/GRU in the parent's forward, before the child runs.

cuDNN lays the recurrent layer's weights out again there, reading every one of them outside the layer's hooks
(ZG303). The same call inside `GatheredParameters`, and a recurrent layer flattening its own weights in its own
forward (gathered by then), are clean.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

DECODER = """
import deepspeed
import torch
from torch import nn


class Decoder(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lstm_layer = nn.LSTM(input_size=d, hidden_size=d)
        self.fc = nn.Linear(d, d)

    def forward(self, x, state):
{flatten}
        out, state = self.lstm_layer(x, state)
        return self.fc(out), state


class Packed(nn.LSTM):
    def forward(self, x, state=None):
        self.flatten_parameters()
        return super().forward(x, state)
"""


def _zg3(flatten: str) -> list[tuple[str, int]]:
    source = textwrap.dedent(DECODER.format(flatten=flatten))
    return [(f.code, f.line) for f in check_source("decoder.py", source) if f.code.startswith("ZG3")]


def test_a_childs_weights_laid_out_in_the_parents_forward():
    assert _zg3("        self.lstm_layer.flatten_parameters()") == [("ZG303", 14)]


def test_flattened_inside_a_gather_or_by_the_layer_itself_is_clean():
    gathered = (
        "        with deepspeed.zero.GatheredParameters(list(self.lstm_layer.parameters())):\n"
        "            self.lstm_layer.flatten_parameters()"
    )
    assert _zg3(gathered) == []
