"""Training scripts as research code writes them: the model built inside a data-parallel wrapper, by a module
imported by name, or from a folder the script puts on `sys.path`; a list of its parameters clipped, deep-copied or
pickled; its state read entry by entry; safetensors' loaders and savers. Each is the model the script built, so each
use is the hazard a plain `model = Net()` would be."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found, found_in_directory, found_in_package

NETS = '''
from torch import nn


class Flow(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        return self.proj(x)
'''

WRAPPED = '''
import torch
from torch import nn

from .nets import Flow


def train(args, loader):
    model = nn.DataParallel(Flow(args.d).cuda(), device_ids=args.gpus)
    model.load_state_dict(torch.load(args.restore))
    for x in loader:
        model(x).sum().backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    torch.save(model.state_dict(), "flow.pth")
'''


def test_a_model_built_inside_a_data_parallel_wrapper_is_the_model_built(tmp_path: Path) -> None:
    found = found_in_package(tmp_path, {"nets.py": NETS, "train.py": WRAPPED}, "train.py", prefix="ZG1")
    assert ("ZG108", 10) in found and ("ZG107", 13) in found and ("ZG108", 14) in found


SCRIPT = '''
import copy
import sys

import torch

sys.path.append("core")
from flow import Flow

model = Flow(8)
params = list(model.parameters())


def model_save(fn):
    with open(fn, "wb") as f:
        torch.save([model, params], f)


def train(loader):
    for x in loader:
        model(x).sum().backward()
        torch.nn.utils.clip_grad_norm_(params, 0.25)


def average(loader):
    net = Flow(8)
    net_without_ddp = net
    net_params = list(net_without_ddp.parameters())
    ema_params = copy.deepcopy(net_params)
    first = net.state_dict()["proj.weight"]
    return ema_params, first
'''


def test_a_script_folder_on_sys_path_and_what_stands_for_the_model_it_built(tmp_path: Path) -> None:
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "flow.py").write_text(NETS)
    found = found_in_directory(tmp_path, {"train.py": SCRIPT}, "train.py", prefix="ZG1")
    assert ("ZG108", 16) in found  # the model pickled inside a list
    assert ("ZG107", 22) in found  # a global list of its parameters clipped
    assert ("ZG105", 29) in found  # a list of its parameters (through an alias) deep-copied
    assert ("ZG108", 30) in found  # one entry of its state dict read


IMPORTED_BY_NAME = '''
import importlib

import torch


def main(args):
    model = importlib.import_module(args.model)
    classifier = model.get_model(args.num_class)
    classifier.load_state_dict(torch.load(args.ckpt)["model_state_dict"])
'''

SAFETENSORS = '''
from safetensors.torch import load_model, save_model
from torch import nn


class VLM(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        return self.proj(x)

    @classmethod
    def from_pretrained(cls, d, path):
        model = cls(d)
        load_model(model, path)
        return model

    def save_pretrained(self, path):
        save_model(self, path)
'''


def test_a_model_a_module_imported_by_name_builds_and_safetensors_loads_and_saves(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(IMPORTED_BY_NAME)
    assert ("ZG108", 10) in found(path, "ZG1")
    path = tmp_path / "vlm.py"
    path.write_text(SAFETENSORS)
    assert [f for f in found(path, "ZG1") if f[1] in (17, 21)] == [("ZG108", 17), ("ZG108", 21)]


# The look-alikes: a wrapper around a layer the function trains for itself, a list of a torch layer's parameters,
# a `get_model()` handing back the model a trainer holds, given nothing.
SAFE = '''
import copy

import torch
from torch import nn


def probe(loader, trainer):
    lin = nn.DataParallel(nn.Linear(4, 4))
    for x in loader:
        lin(x).sum().backward()
        torch.nn.utils.clip_grad_norm_(lin.parameters(), 1.0)
    scratch = nn.Linear(4, 4)
    kept = copy.deepcopy(list(scratch.parameters()))
    held = trainer.get_model()
    return kept, held
'''


def test_torch_layers_a_function_trains_itself_are_not_the_model(tmp_path: Path) -> None:
    path = tmp_path / "probe.py"
    path.write_text(SAFE)
    assert found(path, "ZG1") == []


BY_NAME = '''
class Trainer:
    def __init__(self, params):
        self.params = params

    def pc_step(self):
        name = "model" if self.params.encoder_only else "encoder"
        model = getattr(self, name)
        model.train()
        x, lengths = self.get_batch("align")
        bs = lengths.size(0)
        if {test}:
            return
        h = model("fwd", x=x, lengths=lengths)[0]
        self.optimize(h.sum())


class SingleTrainer(Trainer):
    def __init__(self, model, params):
        super().__init__(params)
        self.model = model


class EncDecTrainer(Trainer):
    def __init__(self, encoder, decoder, params):
        super().__init__(params)
        self.encoder = encoder
        self.decoder = decoder
'''


def test_a_model_a_base_trainer_fetches_by_name_from_what_its_subclasses_hold(tmp_path: Path) -> None:
    path = tmp_path / "trainer.py"
    path.write_text(BY_NAME.format(test="bs == 1"))  # this rank's batch of one sentence skips the forward
    assert found(path, "ZG2") == [("ZG204", 12)]
    path.write_text(BY_NAME.format(test="self.params.batch_size == 1"))  # a setting: the same on every rank
    assert found(path, "ZG2") == []
