"""A method of a child module handed another child (`self.ema.update_parameters(self.model)`) is read like a
function handed it (`effects._child_method`): run on the built model (a Lightning hook), what it reads or writes of
the model it is handed is ZG109/ZG101 at the call, also for a model a base class of another file built (h-ema,
nequip's EMALightningModule)."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found_in_package

EMA = '''
import torch
from torch import nn


class EMAWeights(nn.Module):
    def __init__(self, model: nn.Module, decay: float):
        super().__init__()
        self.decay = decay
        self.count = 0

    def update_parameters(self, model: nn.Module) -> None:
        for s, p in zip(self.shadow, model.parameters()):
            s.copy_(s * self.decay + p.detach() * (1 - self.decay))

    def swap_parameters(self, model: nn.Module) -> None:
        with torch.no_grad():
            for s, p in zip(self.shadow, model.parameters()):
                p.copy_(s)

    def tick(self, model: nn.Module) -> None:
        self.count += sum(1 for _ in model.parameters())
'''

BASE = '''
from torch import nn


class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        return self.proj(x)


class LitBase(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.model = nn.ModuleList([Net(d)])

    def forward(self, x):
        return self.model[0](x)
'''

LIT = '''
from torch import nn
from .base import LitBase, Net
from .ema import EMAWeights


class Lit(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.model = Net(d)
        self.ema = EMAWeights(self.model, decay=0.99)

    def forward(self, x):
        return self.model(x)

    def optimizer_step(self, optimizer):
        optimizer.step()
        self.ema.update_parameters(self.model)
        self.ema.tick(self.model)

    def on_validation_start(self):
        self.ema.swap_parameters(self.model)


class EMALit(LitBase):
    def __init__(self, d):
        super().__init__(d)
        self.ema = EMAWeights(self.model, decay=0.99)

    def optimizer_step(self, optimizer):
        optimizer.step()
        self.ema.update_parameters(self.model)
        self.ema.tick(self.model)
'''


def test_a_child_method_handed_a_child_on_the_built_model(tmp_path: Path) -> None:
    found = found_in_package(tmp_path, {"ema.py": EMA, "base.py": BASE, "lit.py": LIT}, "lit.py", prefix="ZG1")
    assert ("ZG109", 18) in found  # reads the model's parameters
    assert ("ZG101", 22) in found  # writes them
    assert ("ZG109", 32) in found  # a model the base class of another file built
    assert not {line for code, line in found if line in (19, 33)}  # `tick` counts parameters only


SWAP = '''
from torch import nn


class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        return self.proj(x)


class Shadow(nn.Module):
    def swap(self, model: nn.Module) -> None:
        for s, p in zip(self.shadow, model.parameters()):
            self._swap(s, p)

    def blend(self, model: nn.Module) -> None:
        for s, p in zip(self.shadow, model.parameters()):
            self._lerp(s, p)

    def _swap(self, a, b):
        tmp = a.clone()
        a.copy_(b)
        b.copy_(tmp)

    def _lerp(self, a, b):
        a.mul_(0.9).add_(b, alpha=0.1)


class Lit(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.model = Net(d)
        self.ema = Shadow()

    def forward(self, x):
        return self.model(x)

    def on_validation_start(self):
        self.ema.swap(self.model)

    def on_train_batch_end(self):
        self.ema.blend(self.model)
'''


def test_a_parameter_handed_to_a_helper_that_writes_it_in_place(tmp_path: Path) -> None:
    found = found_in_package(tmp_path, {"swap.py": SWAP}, "swap.py", prefix="ZG101")
    assert ("ZG101", 42) in found  # `_swap` copies into the model's parameter it is handed
    assert ("ZG101", 45) not in found  # `_lerp` writes only the shadow, reading the parameter
