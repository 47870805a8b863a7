"""A module class that is itself a weight average of the model it is handed (vissl's and timm's `ModelEmaV2`): the
training loop calls its `update(model)` after each step, outside any forward, so what that update reads of the live
model (its state dict) is a placeholder under ZeRO-3. A module of another name keeping a copy is judged as before."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

EMA = """
import torch
import torch.nn as nn


class ModelEmaV2(nn.Module):
    def __init__(self, model, decay=0.999):
        super().__init__()
        self.module = model
        self.decay = decay

    @torch.no_grad()
    def _update(self, model, update_fn):
        base = model.state_dict()
        for key, ema_v in self.module.state_dict().items():
            ema_v.copy_(update_fn(ema_v, base[key]))

    def update(self, model):
        self._update(model, update_fn=lambda e, m: self.decay * e + (1.0 - self.decay) * m)
"""


def found(source: str) -> set[tuple[str, int]]:
    return {(f.code, f.line) for f in check_source("ema.py", textwrap.dedent(source))}


def test_an_averaging_module_reads_the_live_models_state_outside_any_forward():
    assert ("ZG108", 14) in found(EMA)


def test_a_module_of_another_name_keeping_a_model_is_no_averager():
    assert ("ZG108", 14) not in found(EMA.replace("ModelEmaV2", "Teacher"))
