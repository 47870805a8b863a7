"""State dicts of built models taken in shapes a trainer writes them in.

* A state dict bound to a local, then saved whole (`state = model.state_dict()` ... `torch.save(state, path)`), in a
  function that built the model; one read for its size only (`len(state)`) is no read of the tensors.
* The state of the model or of the data-parallel wrapper around it, whichever the setting picks (`(generator.module if
  n > 1 else generator).state_dict()`).
* A model built by calling a config object at the top of a script (`model = model_config()` for `model_config =
  utils.Config(GPT, ...)`), moved to a device and saved.
* A model a helper is handed that it both calls and saves (`dlrm(x)` ... `dlrm.state_dict()`), whatever its name.
* A module's own helper named for handing its state on (`get_state_dict`), run on the built model.
"""

from __future__ import annotations

from zgen.model import check_source

from tests.model.package_check import TINY_NET

FUNCTIONS = """
import torch
from torch import nn

""" + TINY_NET + """

def train(loader, n_gpus):
    model = Net()
    for x in loader:
        model(x).sum().backward()
    state = model.state_dict()
    torch.save(state, "ckpt.pt")
    sizes = model.state_dict()
    print(len(sizes))
    wrapped = Net()
    torch.save({"net": (wrapped.module if n_gpus > 1 else wrapped).state_dict()}, "w.pt")


def evaluate(args, dlrm, loader):
    for x in loader:
        dlrm(x)
    return {"state_dict": dlrm.state_dict()}


class Retriever(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)

    def get_state_dict(self):
        return self.state_dict()
"""

SCRIPT = """
import torch
import utils
from models import GPT

model_config = utils.Config(GPT, savepath="out", n_layer=4)
model = model_config()
model.to("cuda")
for epoch in range(10):
    trainer.train(model, dataset)
    state = model.state_dict()
    torch.save(state, f"state_{epoch}.pt")
"""


def _found(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("train.py", source) if f.code.startswith("ZG1")]


def test_state_dicts_saved_whole_by_functions_and_modules():
    lines = dict(enumerate(FUNCTIONS.split("\n"), 1))
    found = _found(FUNCTIONS)
    assert [lines[line].strip().split(" = ")[0] for _, line in found] == [
        "state", 'torch.save({"net": (wrapped.module if n_gpus > 1 else wrapped).state_dict()}, "w.pt")',
        'return {"state_dict": dlrm.state_dict()}', "return self.state_dict()",
    ]
    assert {code for code, _ in found} == {"ZG108"}


def test_a_model_a_config_object_builds_at_the_top_of_a_script():
    assert _found(SCRIPT) == [("ZG108", 11)]
