"""The state dict of a model the same function built, handed on whole (saved, copied as the best weights, loaded
into another model), holds placeholders under `zero.Init` (ProteinMPNN's training script saves
`model.state_dict()` each epoch); one read for its keys alone names the parameters and reads none."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

from package_check import found_in_directory

TRAIN = """
import copy

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(256, 256)

    def forward(self, x):
        return self.fc(x)


def main(path, loader):
    model = Net()
    opt = torch.optim.Adam(model.parameters())
    for x in loader:
        model(x).sum().backward()
        opt.step()
    torch.save({"epoch": 1, "model_state_dict": model.state_dict()}, path)
"""


def found(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("train.py", textwrap.dedent(source))]


def test_the_state_of_a_model_built_above_saved_whole_is_placeholders():
    assert ("ZG108", 23) in found(TRAIN)


def test_the_state_of_a_model_built_above_kept_as_the_best_is_placeholders():
    source = TRAIN.replace('torch.save({"epoch": 1, "model_state_dict": model.state_dict()}, path)',
                           "best = copy.deepcopy(model.state_dict())")
    assert ("ZG108", 23) in found(source)


def test_the_keys_of_the_state_of_a_model_built_above_are_whole():
    source = TRAIN.replace('torch.save({"epoch": 1, "model_state_dict": model.state_dict()}, path)',
                           "torch.save(sorted(model.state_dict()), path)")
    assert ("ZG108", 23) not in found(source)


def test_the_state_of_a_model_built_above_read_while_gathered_is_whole():
    source = TRAIN.replace(
        '    torch.save({"epoch": 1, "model_state_dict": model.state_dict()}, path)',
        "    with deepspeed.zero.GatheredParameters(list(model.parameters())):\n"
        '        torch.save({"epoch": 1, "model_state_dict": model.state_dict()}, path)',
    ).replace("import torch\n", "import deepspeed\nimport torch\n", 1)
    assert [code for code, _ in found(source) if code == "ZG108"] == []


MODEL_UTILS = """
from torch import nn


class ProteinNet(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.fc = nn.Linear(hidden, hidden)

    def forward(self, x):
        return self.fc(x)
"""

SCRIPT = """
import argparse


def main(args):
    import torch
    from model_utils import ProteinNet

    model = ProteinNet(args.hidden)
    if args.resume:
        model.load_state_dict(torch.load(args.resume)["model_state_dict"])
"""


def _script(tmp_path, script: str):
    return found_in_directory(tmp_path, {"model_utils.py": MODEL_UTILS, "training.py": script}, "training.py")


def test_a_script_function_opening_with_its_imports_builds_the_model_it_imports(tmp_path):
    assert ("ZG108", 11) in _script(tmp_path, SCRIPT)


def test_a_class_imported_under_a_test_inside_the_function_stays_unread(tmp_path):
    # (imported on some paths only: a component built lazily, as a method's local import is)
    source = SCRIPT.replace("    from model_utils import ProteinNet\n", "    if args.protein:\n        from model_utils import ProteinNet\n")
    assert ("ZG108", 12) not in _script(tmp_path, source)


TRAINER_STATE = """
from torch import nn


class Trainer:
    def __init__(self, model: nn.Module, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.step = 0

    def state_dict(self):
        state = {"step": self.step}
        for name in ("model", "optimizer"):
            held = getattr(self, name)
            state[name] = held.state_dict()
        return state
"""


def test_a_trainers_own_state_dict_collects_the_state_of_the_model_it_holds():
    # (VAR's trainer: each object it holds, the model among them, taken by its attribute's name)
    assert ("ZG108", 15) in found(TRAINER_STATE)


def test_a_trainers_own_state_dict_of_its_counters_reads_no_model():
    source = TRAINER_STATE.replace('("model", "optimizer")', '("optimizer",)')
    assert [code for code, _ in found(source) if code == "ZG108"] == []


MODELS = """
from torch import nn


class DiT(nn.Module):
    def __init__(self, depth=2, hidden=64):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(depth))

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def DiT_S(**kwargs):
    return DiT(depth=2, **kwargs)


def DiT_L(**kwargs):
    return DiT(depth=8, **kwargs)


DiT_models = {"DiT-S": DiT_S, "DiT-L": DiT_L}
"""

SAMPLE = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

from models import DiT_models


def main(args, rank):
    model = DiT_models[args.model](hidden=args.hidden)
    model.load_state_dict(torch.load(args.ckpt))
    model = DDP(model, device_ids=[rank])
    if rank == 0:
        torch.save({"model": model.module.state_dict()}, args.out)
"""


def test_a_model_built_from_a_registry_another_file_fills_is_built_here(tmp_path):
    # DiT's `sample_ddp.py`: `DiT_models[args.model](...)`, the registry of `models.py` mapping names to factories
    findings = found_in_directory(tmp_path, {"models.py": MODELS, "sample.py": SAMPLE}, "sample.py")
    assert ("ZG108", 10) in findings  # the load into it
    assert ("ZG108", 13) in findings  # the state of the model the data-parallel wrapper wraps


def test_a_registry_of_no_module_builds_no_model(tmp_path):
    plain = MODELS.replace('{"DiT-S": DiT_S, "DiT-L": DiT_L}', '{"DiT-S": dict, "DiT-L": dict}')
    assert ("ZG108", 10) not in found_in_directory(tmp_path, {"models.py": plain, "sample.py": SAMPLE}, "sample.py")


def test_the_state_of_a_model_built_above_bound_and_written_entry_by_entry_is_reported_at_each_write():
    # minGPT's `from_pretrained`: `sd = model.state_dict()` ... `sd[k].copy_(sd_hf[k])`: the copy lands in a
    # placeholder, so the finding is where the copy is (each one), not where the state dict was taken
    source = TRAIN.replace(
        'torch.save({"epoch": 1, "model_state_dict": model.state_dict()}, path)',
        "sd = model.state_dict()\n    for k in sd:\n        if k.endswith('w'):\n            sd[k].copy_(path[k].t())\n"
        "        else:\n            sd[k].data[:4] = path[k]",
    )
    findings = [f for f in found(source) if f[0] == "ZG108"]
    assert ("ZG108", 26) in findings and ("ZG108", 28) in findings
    assert ("ZG108", 23) not in findings


def test_the_state_of_a_model_built_above_bound_and_its_entries_only_read_is_reported_where_it_is_taken():
    source = TRAIN.replace('torch.save({"epoch": 1, "model_state_dict": model.state_dict()}, path)',
                           "sd = model.state_dict()\n    for k in sd:\n        path[k].copy_(sd[k])")
    assert [f for f in found(source) if f[0] == "ZG108"] == [("ZG108", 23)]


def test_the_state_of_a_model_built_above_bound_and_counted_reads_no_tensor():
    source = TRAIN.replace('torch.save({"epoch": 1, "model_state_dict": model.state_dict()}, path)',
                           "sd = model.state_dict()\n    assert len(sd) == len(path)")
    assert ("ZG108", 23) not in found(source)
