"""A module handed back by an unwrapping call is the module it was given.

A trainer written as an `nn.Module` keeps the model as a child and runs it through
`self.accelerator.unwrap_model(self.net)`: a call of what that hands back is a call of the child, so a rank test
around it (`if self.is_main: ...`) makes ranks run different submodules (ZG201), as `self.net(x)` would.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

TRAINER = """
import torch
from accelerate import Accelerator
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return self.fc(x)


class Trainer(nn.Module):
    def __init__(self, net: Net):
        super().__init__()
        self.net = net
        self.accelerator = Accelerator()

    @property
    def is_main(self):
        return self.accelerator.is_main_process

    def train_step(self, x, steps):
        loss = self.net(x).sum()
        self.accelerator.backward(loss)
{body}
"""


def findings(body: str) -> list[tuple[str, int]]:
    source = TRAINER.format(body=textwrap.indent(textwrap.dedent(body), " " * 8))
    return [(f.code, f.line) for f in check_source("trainer.py", source) if f.code.startswith("ZG2")]


def test_the_main_rank_running_the_unwrapped_child_diverges():
    assert findings("""
        if self.is_main and not (steps % 100):
            model = self.accelerator.unwrap_model(self.net)
            with torch.inference_mode():
                valid_loss = model(x)
    """) == [("ZG201", 30)]


def test_every_rank_running_the_unwrapped_child_or_the_main_rank_only_logging_its_loss_is_safe():
    assert findings("""
        model = self.accelerator.unwrap_model(self.net)
        with torch.inference_mode():
            valid_loss = model(x)
        if self.is_main and not (steps % 100):
            print(steps, valid_loss.item())
            torch.save({"steps": steps, "loss": valid_loss}, "progress.pt")
    """) == []
