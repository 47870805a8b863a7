"""A trainer that is itself a module and prepares the model it is handed in its `__init__`
(`self.accelerator.prepare(...)`) is no script scope (the script rules read plain objects and functions), so what
that `__init__` does to the model is judged as for any holder of a built model (h-ema, dalle2's
DiffusionPriorTrainer): averaging it copies it."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found_in_package

TRAINER = '''
import torch
from torch import nn
from ema_pytorch import EMA
from accelerate import Accelerator


class Prior(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        return self.proj(x)


class PriorTrainer(nn.Module):
    def __init__(self, diffusion_prior, accelerator=None, use_ema=True, lr=1e-4):
        super().__init__()
        assert isinstance(diffusion_prior, Prior)
        self.accelerator = accelerator if accelerator is not None else Accelerator()
        self.diffusion_prior = diffusion_prior
        self.optimizer = torch.optim.Adam(self.diffusion_prior.parameters(), lr=lr)
        self.diffusion_prior, self.optimizer = self.accelerator.prepare(self.diffusion_prior, self.optimizer)
        if use_ema:
            self.ema_diffusion_prior = EMA(self.accelerator.unwrap_model(self.diffusion_prior))
        self.steps = self.accelerator.prepare(torch.zeros(1))

    def forward(self, x):
        return self.diffusion_prior(x)
'''


def test_a_module_trainer_averaging_the_model_it_prepared(tmp_path: Path) -> None:
    found = found_in_package(tmp_path, {"trainer.py": TRAINER}, "trainer.py", prefix="ZG1")
    assert found == [("ZG105", 26)]  # the copy; not the optimizer built over the parameters, nor the step count
