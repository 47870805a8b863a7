"""Training scripts in the style of detection trainers: the rank read once at the top of the file, the evaluation a
function of another module of the package, the averaged copy of the model kept by an object of the package.

* `RANK = int(os.getenv("RANK", -1))` at the top of a file is this process's rank: `if RANK in {-1, 0}:` decides on
  it, whatever the name says. A constant that only happens to be called so (`RANK = 8`, a LoRA rank) is none.
* `validate.run(data, model=ema.ema)` for `from . import val as validate`: a function of another module of the
  package, handed a model it runs, runs it; under a rank test only some ranks do (ZG201). A function that only
  reports on the model runs nothing.
* `ema = ModelEMA(model) if RANK in {-1, 0} else None`: `ema.ema` is the model the object keeps.
* An assignment under a rank test that binds each name to what it held already (`if RANK == 0: epochs =
  opt.epochs` after `epochs = opt.epochs`) decides nothing.
"""

from __future__ import annotations

from package_check import found_in_package

UTILS = """
from copy import deepcopy


class ModelEMA:
    def __init__(self, model, decay=0.9999):
        self.ema = deepcopy(model).eval()
        self.decay = decay
"""

VAL = """
def run(data, model=None, dataloader=None):
    model.eval()
    return [model(im) for im in dataloader]


def report(data, model=None, dataloader=None):
    print(data, type(model).__name__, model.training)
    return len(dataloader)
"""

TRAIN = """
import os

from torch import nn

from . import val as validate
from .utils import ModelEMA

RANK = {rank}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return self.fc(x)


def train(opt, loader, val_loader):
    epochs = opt.epochs
    model = Net()
    ema = ModelEMA(model) if RANK in {{-1, 0}} else None
    if RANK == 0:
        epochs = opt.epochs
    for epoch in range(epochs):
        for x in loader:
            model(x).sum().backward()
        if RANK in {{-1, 0}}:
            results = validate.{evaluate}(opt.data, model={handed}, dataloader=val_loader)
"""


def found(tmp_path, rank: str, evaluate: str, handed: str) -> list[tuple[str, int]]:
    files = {"utils.py": UTILS, "val.py": VAL, "train.py": TRAIN.format(rank=rank, evaluate=evaluate, handed=handed)}
    return found_in_package(tmp_path, files, "train.py", prefix="ZG2")


def test_a_module_function_running_the_model_kept_by_an_averager_on_the_main_rank(tmp_path):
    assert found(tmp_path, 'int(os.getenv("RANK", -1))', "run", "ema.ema") == [("ZG201", 30)]
    assert found(tmp_path, 'int(os.getenv("RANK", -1))', "run", "model") == [("ZG201", 30)]


def test_a_module_function_reporting_on_the_model_runs_nothing(tmp_path):
    assert found(tmp_path, 'int(os.getenv("RANK", -1))', "report", "ema.ema") == []


def test_a_constant_that_is_no_rank_decides_nothing(tmp_path):
    assert found(tmp_path, "8", "run", "model") == []
