"""A function handed a model walks the keys of a batch mapping and runs the submodule each key names.

`for key in batch: model.encoders[key](batch[key])`: as many encoders run as this rank's batch has fields, and
which ones; a rank whose batch lacks a modality skips that encoder's all-gather (ZG203), as
`self.encoders[key](...)` in the model's own forward already is. Keys of a mapping the code keeps (a setting on the
object, not what the call was handed) are the same on every rank.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
from torch import nn


class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.encoders = nn.ModuleDict({"image": nn.Linear(d, d), "text": nn.Linear(d, d)})

    def forward(self, x):
        return x


{step}
"""


def _zg203(step: str) -> list[int]:
    source = textwrap.dedent(SOURCE).replace("{step}", textwrap.dedent(step))
    return [f.line for f in check_source("train.py", source) if f.code == "ZG203"]


def test_a_function_walking_the_batch_keys_runs_the_encoder_each_names():
    assert _zg203("""
        def train_step(model, batch):
            out = 0
            for key in batch:
                out = out + model.encoders[key](batch[key]).sum()
            return out
    """) == [17]


def test_a_trainer_walking_the_keys_of_a_mapping_it_keeps_is_clean():
    assert _zg203("""
        class Trainer:
            def __init__(self, model, modalities):
                self.model = model
                self.modalities = modalities

            def step(self, x):
                out = 0
                for key in self.modalities:
                    out = out + self.model.encoders[key](x).sum()
                return out
    """) == []
