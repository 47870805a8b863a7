"""What an unwrapping call hands back (`accelerator.unwrap_model(self.model)`) is the model it was given: a trainer
updating its average through one (`unwrap_model(self.ema).update()`, ZG101) or running the unwrapped model on the main
process alone (`unwrapped = unwrap_model(self.model)` ... `unwrapped(batch)` under `if self.is_main:`, ZG201) is
read as if it named the model. The same unwrapped model run on every rank, or only put in eval mode on the main
process, is no hazard.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
import torch
from torch import nn
from accelerate import Accelerator
from ema_pytorch import EMA


class Trainer:
    def __init__(self, model: nn.Module, optimizer, valid_dl):
        self.accelerator = Accelerator()
        self.model = model
        self.ema = EMA(model, beta=0.999)
        self.optimizer = optimizer
        self.valid_dl = valid_dl
        self.model, self.optimizer = self.accelerator.prepare(self.model, self.optimizer)

    @property
    def is_main(self):
        return self.accelerator.is_main_process

    def train_step(self, batch, step):
        loss = self.model(batch)
        self.accelerator.backward(loss)
        self.optimizer.step()
        {update}
        if self.is_main and not (step % 100):
            unwrapped = self.accelerator.unwrap_model(self.model)
            with torch.inference_mode():
                {valid}
        return loss
"""

UPDATE = "self.accelerator.unwrap_model(self.ema).update()"
VALID = "valid_loss = unwrapped(next(iter(self.valid_dl)))"


def findings(update: str = "pass", valid: str = "pass") -> list[tuple[str, int]]:
    source = textwrap.dedent(SOURCE).format(update=update, valid=valid)
    return [(f.code, f.line) for f in check_source("m.py", source) if f.code in ("ZG101", "ZG201")]


def test_an_average_updated_through_an_unwrapped_handle_writes_the_parameters():
    assert findings(update=UPDATE) == [("ZG101", 25)]


def test_the_unwrapped_model_run_on_the_main_process_alone():
    assert findings(valid=VALID) == [("ZG201", 26)]


def test_the_unwrapped_model_put_in_eval_mode_on_the_main_process_runs_nothing():
    assert findings(valid="self.accelerator.unwrap_model(self.model).eval()") == []


def test_the_unwrapped_model_run_on_every_rank():
    source = textwrap.dedent(SOURCE).format(update="pass", valid="pass").replace(
        "        loss = self.model(batch)\n", "        loss = self.accelerator.unwrap_model(self.model)(batch)\n"
    )
    assert [(f.code, f.line) for f in check_source("m.py", source) if f.code.startswith("ZG2")] == []
