"""The copy of a model a library's weight average keeps (`self.ema.ema_model` of `self.ema = EMA(self.model)`,
`known.AVERAGER_COPIES`, `holds.averaged_copies`) is a model that runs, and a method calling a local bound to one of
its own methods, or to a choice of them (`fn = self.ddpm_sample if not self.ddim else self.ddim_sample; fn(shape)`),
runs what that method runs (`runs.HelperRuns`): a rank gate around `self.ema.ema_model.sample(n)` is ZG201. Each
beside a look-alike."""

from __future__ import annotations

from package_check import found_in_package

DIFFUSION = """
import torch
from torch import nn


class Diffusion(nn.Module):
    def __init__(self, d=512, use_ddim=False):
        super().__init__()
        self.net = nn.Linear(d, d)
        self.use_ddim = use_ddim

    def ddpm_sample(self, shape):
        x = torch.randn(shape)
        for _ in range(10):
            x = self.net(x)
        return x

    def ddim_sample(self, shape):
        return self.net(torch.randn(shape))

    def zeros(self, shape):
        return torch.zeros(shape)

    def ones(self, shape):
        return torch.ones(shape)

    @torch.no_grad()
    def sample(self, n):
        sample_fn = self.ddpm_sample if not self.use_ddim else self.ddim_sample
        return sample_fn((n, 8))

    def blank(self, n):
        fill = self.zeros if not self.use_ddim else self.ones
        return fill((n, 8))

    def forward(self, x):
        return (self.net(x) - x).pow(2).mean()
"""

EMA_SAMPLES = """
import torch
from ema_pytorch import EMA
from accelerate import Accelerator
from .diffusion import Diffusion


class Trainer:
    def __init__(self, model: Diffusion):
        self.accelerator = Accelerator()
        self.model = model
        self.ema = EMA(model, beta=0.99)

    def train(self, x, batches):
        self.accelerator.backward(self.model(x))
        if self.accelerator.is_main_process:
            with torch.no_grad():
                images = list(map(lambda n: self.ema.ema_model.sample(n), batches))
            torch.save(images, "x.pt")
"""

EMA_EVERY_RANK = """
import torch
from ema_pytorch import EMA
from accelerate import Accelerator
from .diffusion import Diffusion


class Trainer:
    def __init__(self, model: Diffusion):
        self.accelerator = Accelerator()
        self.model = model
        self.ema = EMA(model, beta=0.99)

    def train(self, x, n):
        self.accelerator.backward(self.model(x))
        with torch.no_grad():
            images = self.ema.ema_model.sample(n)
        if self.accelerator.is_main_process:
            self.ema.ema_model.train()
            torch.save(images, "x.pt")
"""

BLANK = """
import torch
from .diffusion import Diffusion


class Trainer:
    def __init__(self, model: Diffusion, rank=0):
        self.model = model
        self.rank = rank

    def train(self, x):
        self.model(x).backward()
        if self.rank == 0:
            torch.save(self.model.blank(4), "s.pt")
"""


def test_the_averaged_copy_samples_on_the_main_process(tmp_path):
    files = {"diffusion.py": DIFFUSION, "train.py": EMA_SAMPLES}
    assert ("ZG201", 16) in found_in_package(tmp_path, files, "train.py", prefix="ZG2")


def test_the_averaged_copy_samples_on_every_rank(tmp_path):
    files = {"diffusion.py": DIFFUSION, "train.py": EMA_EVERY_RANK}
    assert found_in_package(tmp_path, files, "train.py", prefix="ZG2") == []


def test_a_method_choosing_helpers_that_run_nothing(tmp_path):
    files = {"diffusion.py": DIFFUSION, "train.py": BLANK}
    assert found_in_package(tmp_path, files, "train.py", prefix="ZG2") == []


SAMPLES = BLANK.replace("self.model.blank(4)", "self.model.sample(4)")


def test_a_method_choosing_helpers_that_run_the_network(tmp_path):
    files = {"diffusion.py": DIFFUSION, "train.py": SAMPLES}
    assert ("ZG201", 13) in found_in_package(tmp_path, files, "train.py", prefix="ZG2")
