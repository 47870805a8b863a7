"""State dicts a training script takes of the models it built, where the model reaches the save by a road other
than a local named as models are: a global the module-level code built and then wrapped in `nn.DataParallel`, a
module of no parameters of its own holding the model (`diffusion = Diffusion(denoise_fn=model)`), a function of
the file handed the model under any name (`inference(args, dlrm)`), a helper of another file that peels the model
of its wrappers before taking its state, a script loading its model before apex's mixed precision (which, unlike
`deepspeed.initialize`, partitions nothing). Under `zero.Init` each model is partitioned once its constructor
returned, so the state dict holds empty placeholders. A mapping the script filled itself, and a function handed
only settings or only reading the model's class, stay quiet."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found, found_in_directory

GLOBAL_WRAPPED = '''
import importlib

import torch
from torch import nn

MODEL = importlib.import_module("votenet")
Detector = MODEL.VoteNet
net = Detector(num_class=10)
if torch.cuda.device_count() > 1:
    net = nn.DataParallel(net)


def train(epochs):
    for epoch in range(epochs):
        save_dict = {"epoch": epoch + 1}
        save_dict["model_state_dict"] = net.module.state_dict()
        save_dict["note"] = "plain"
        torch.save(save_dict, "checkpoint.tar")
'''


def test_a_global_model_wrapped_for_data_parallel_saved_into_a_checkpoint_entry(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(GLOBAL_WRAPPED)
    assert found(path, "ZG1") == [("ZG108", 17)]


MODELS = '''
import torch
from torch import nn


class MLPDiffusion(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d, 512), nn.ReLU(), nn.Linear(512, d))

    def forward(self, x):
        return self.net(x)


class GaussianDiffusion(nn.Module):
    """Holds the denoiser it is handed (run by its losses, not by a forward); its own state is buffers."""

    def __init__(self, denoise_fn, steps=1000):
        super().__init__()
        self._denoise_fn = denoise_fn
        self.register_buffer("betas", torch.linspace(1e-4, 0.02, steps))

    def mixed_loss(self, x):
        noise = torch.randn_like(x)
        return ((self._denoise_fn(x + noise) - noise) ** 2).mean()
'''

WRAPPED_BY_A_HOLDER = '''
import torch

from models import GaussianDiffusion, MLPDiffusion


def train(d, steps):
    model = MLPDiffusion(d)
    diffusion = GaussianDiffusion(denoise_fn=model, steps=steps)
    diffusion.train()
    torch.save(diffusion._denoise_fn.state_dict(), "model.pt")
'''


def test_a_module_holding_the_built_model_saves_its_placeholders(tmp_path: Path) -> None:
    files = {"models.py": MODELS, "train.py": WRAPPED_BY_A_HOLDER}
    assert found_in_directory(tmp_path, files, "train.py", "ZG1") == [("ZG108", 11)]


HANDED_UNDER_ANY_NAME = '''
import torch
from torch import nn


class DLRM(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.bot = nn.Linear(n, 512)

    def forward(self, x):
        return self.bot(x)


def score(net, x):
    return net(x).sum()


def inference(args, dlrm, loader):
    scores = [score(dlrm, x) for x in loader]
    return {"state_dict": dlrm.state_dict(), "scores": scores, "epochs": args.epochs}


def report(args, stats):
    return {"state_dict": stats.state_dict(), "epochs": args.epochs}


def main(args, loader):
    dlrm = DLRM(args.n)
    metrics = inference(args, dlrm, loader)
    summary = report(args, metrics)
    return summary
'''


def test_a_function_of_the_file_handed_the_built_model_under_any_name(tmp_path: Path) -> None:
    path = tmp_path / "dlrm.py"
    path.write_text(HANDED_UNDER_ANY_NAME)
    assert found(path, "ZG1") == [("ZG108", 21)]


CHECKPOINTS = '''
import torch


def unwrap_model_fn(model):
    unwrapped = model
    while True:
        if hasattr(unwrapped, "module"):
            unwrapped = unwrapped.module
        else:
            break
    return unwrapped


def get_model_state_dict(model):
    unwrapped_model = unwrap_model_fn(model)
    return unwrapped_model.state_dict()


def save_checkpoint(epoch, model, save_dir):
    torch.save({"epoch": epoch, "model_state_dict": get_model_state_dict(model)}, save_dir + "/last.pt")


def save_log(epoch, model, save_dir):
    torch.save({"epoch": epoch, "name": type(model).__name__}, save_dir + "/log.pt")
'''

TRAINER = '''
from checkpoints import save_checkpoint, save_log


class Trainer:
    def __init__(self, model, save_dir):
        self.model = model
        self.save_dir = save_dir

    def run(self, epochs):
        for epoch in range(epochs):
            save_log(epoch, self.model, self.save_dir)
            save_checkpoint(epoch=epoch, model=self.model, save_dir=self.save_dir)
'''


def test_a_held_model_handed_to_a_helper_that_unwraps_it_then_takes_its_state(tmp_path: Path) -> None:
    files = {"checkpoints.py": CHECKPOINTS, "trainer.py": TRAINER}
    assert found_in_directory(tmp_path, files, "trainer.py", "ZG1") == [("ZG108", 13)]


APEX_SCRIPT = '''
import torch
from torch import optim

from pixelsnail import PixelSNAIL

try:
    from apex import amp
except ImportError:
    amp = None

if __name__ == "__main__":
    ckpt = torch.load("last.pt")
    model = PixelSNAIL([32, 32], 512)
    model.load_state_dict(ckpt["model"])
    optimizer = optim.Adam(model.parameters(), lr=3e-4)
    if amp is not None:
        model, optimizer = amp.initialize(model, optimizer, opt_level="O1")
'''

DEEPSPEED_SCRIPT = APEX_SCRIPT.replace("from apex import amp", "import deepspeed as amp").replace(
    'amp.initialize(model, optimizer, opt_level="O1")', "amp.initialize(model=model, optimizer=optimizer)[:2]")


PIXELSNAIL = '''
from torch import nn


class PixelSNAIL(nn.Module):
    def __init__(self, shape, n_class):
        super().__init__()
        self.embed = nn.Embedding(n_class, 256)
        self.out = nn.Conv2d(256, n_class, 1)

    def forward(self, x):
        return self.out(self.embed(x).permute(0, 3, 1, 2))
'''


def test_a_script_loading_its_model_before_apex_mixed_precision(tmp_path: Path) -> None:
    files = {"pixelsnail.py": PIXELSNAIL, "train_pixelsnail.py": APEX_SCRIPT}
    assert found_in_directory(tmp_path, files, "train_pixelsnail.py", "ZG1") == [("ZG108", 15)]


def test_a_script_loading_its_model_before_deepspeed_partitions_it(tmp_path: Path) -> None:
    files = {"pixelsnail.py": PIXELSNAIL, "train_pixelsnail.py": DEEPSPEED_SCRIPT}
    assert found_in_directory(tmp_path, files, "train_pixelsnail.py", "ZG1") == []


SELF_ALIASED = '''
import os

import torch
from torch import nn


class BaseModel(nn.Module):
    def save_pretrained_weight(self, save_directory, state_dict=None):
        model_to_save = self
        if state_dict is None:
            state_dict = model_to_save.state_dict()
        torch.save(state_dict, os.path.join(save_directory, "pytorch_model.bin"))

    def describe(self, save_directory):
        owner = self
        torch.save({"class": type(owner).__name__}, os.path.join(save_directory, "meta.bin"))


class TiTok(BaseModel):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(256, 256)
'''


def test_a_module_saving_its_own_state_through_a_local_bound_to_itself(tmp_path: Path) -> None:
    path = tmp_path / "base_model.py"
    path.write_text(SELF_ALIASED)
    assert found(path, "ZG1") == [("ZG108", 12)]
