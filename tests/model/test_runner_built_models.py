"""A model a method of a runner class (no module) builds and trains itself, and one a script builds at its top.

DDIM's `Diffusion.train` builds `model = Model(config)`, wraps it in `DataParallel` and clips
`model.parameters()` after each backward. Trained under ZeRO-3 the model was partitioned when built, so the clip
sees no gradients, as in a training function outside any class. Transformer-XL's `train.py` builds its model at
the top of the script and its `train()` clips and pickles that global.
"""

from __future__ import annotations

from zgen.model import check_source

from tests.model.package_check import TINY_NET

RUNNER = """
import torch
from torch import nn


""" + TINY_NET + """

class Runner:
    def __init__(self, config):
        self.config = config

    def train(self, loader):
        model = Net()
        model = torch.nn.DataParallel(model)
        optimizer = torch.optim.Adam(model.parameters())
        for x in loader:
            loss = model(x).sum()
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), self.config.grad_clip)
            optimizer.step()

    def probe(self, loader):
        lin = nn.Linear(4, 4)
        for x in loader:
            lin(x).sum().backward()
            torch.nn.utils.clip_grad_norm_(lin.parameters(), 1.0)
"""


def test_a_runner_clipping_the_model_it_built():
    found = [(f.code, f.line) for f in check_source("runner.py", RUNNER) if f.code == "ZG107"]
    assert found == [("ZG107", 27)]


SCRIPT = """
import torch
from torch import nn


""" + TINY_NET + """

model = Net()
optimizer = torch.optim.Adam(model.parameters())


def train(loader, path):
    for x in loader:
        model(x).sum().backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        optimizer.step()
    with open(path, "wb") as f:
        torch.save(model, f)


def evaluate(loader, model):
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
    torch.save(model, "m.pt")
"""


def test_a_function_training_the_model_the_script_built_at_its_top():
    found = [(f.code, f.line) for f in check_source("train.py", SCRIPT) if f.code in ("ZG107", "ZG108")]
    assert ("ZG107", 22) in found and ("ZG108", 25) in found
    message = next(f.message for f in check_source("train.py", SCRIPT) if (f.code, f.line) == ("ZG108", 25))
    assert "at the top of this script" in message
