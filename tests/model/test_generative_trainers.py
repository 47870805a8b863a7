"""Facts from flow and diffusion trainers: models rebuilt from a config, averages picked by a helper, conditional
expressions and tied asserts around optional towers, copies of a member.

Each fact has a hazard and a look-alike that must stay clean:

* a name holding a handed model, rebound to a module built in its place (`model = Unet(**model)` when a config
  dict was given), still holds a built model: `EMA(model)` after it copies partitioned placeholders;
* an averager given as one alternative of an attribute (`default(teacher, EMA(model))`, `teacher or EMA(model)`)
  is still an averager of the model: its `update()` reads and writes every parameter;
* a conditional expression (`t = self.mlp(times) if exists(times) else None`) gates a tower like an `if`, and
  a presence test of a `self` attribute beside it (`exists(self.mlp)`) is the configuration;
* an input whose presence an assert ties to the configuration (`assert not (exists(c) ^ exists(self.c_mlp))`)
  is the same on every rank;
* `self.b = deepcopy(self.a)` is a module of `self.a`'s classes, so a branch that runs it runs a tower;
* a local bound to the class of a module (`layer_type = type(self.base)`) builds a module of that class when
  called, so initialising what it built in `__init__` writes partitioned placeholders;
* a parameter annotated with a weight-averaging class (`ema: Optional[ExponentialMovingAverage]`), handed to a
  function that holds the built model, averages that model: its updates (and `average_parameters()`, which
  swaps the averages in) write every parameter;
* a field a plain class (a dataclass) declares with a module type holds a built model when an instance is
  handed in (`state.model.state_dict()` for `state: CheckpointState`);
* a wrapper module built around a module it is given (`self.model = Reflow(model)`, no parameters of its own)
  holds that module: a trainer's state dict of it reads partitioned parameters;
* a module handed to the constructor as any `nn.Module` may be a whole network: an optional input that skips
  it (or returns before it) gates a tower;
* a function transform given a module (`jvp(self.model, ...)`, `checkpoint(self.block, x)`) runs it, and a random
  or data decision whose two branches run the same submodules once each does not make ranks diverge.
"""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

HEAD = """
from copy import deepcopy

import torch
from torch import nn
from torch.nn import Module
from ema_pytorch import EMA


def exists(v):
    return v is not None


def default(v, d):
    return v if exists(v) else d


class Net(Module):
    def __init__(self, dim=4):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        return self.out(self.proj(x))
"""


def codes(source: str, family: str) -> list[str]:
    findings = check_source("m.py", HEAD + textwrap.dedent(source))
    return sorted(f.code for f in findings if f.code.startswith(family))


# A plain class holding the training state, and a saver handed one.
STATE = """
import dataclasses


@dataclasses.dataclass
class State:
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer


class Saver:
    @staticmethod
    def create(state: State) -> dict:"""

# A flow model that runs its network plainly or through `jvp`.
MEAN_FLOW = """
from random import random
from torch.func import jvp


class MeanFlow(Module):
    def __init__(self, model: Net):
        super().__init__()
        self.model = model

    def forward(self, x, t):"""

HAZARDS = {
    "rebuilt-from-config-then-averaged": ("ZG1", "ZG105", """
class Flow(Module):
    def __init__(self, model: dict | Module, use_ema=False):
        super().__init__()
        if isinstance(model, dict):
            model = Net(**model)
        self.model = model
        if use_ema:
            self.ema_model = EMA(model, beta=0.9)
"""),
    "averager-as-a-default": ("ZG1", "ZG101", """
class SelfDistill(Module):
    def __init__(self, model: Module, teacher: Module | None = None):
        super().__init__()
        self.model = model
        self.teacher = default(teacher, EMA(model))

    def post_step(self):
        self.teacher.update()
"""),
    "averager-as-an-or": ("ZG1", "ZG101", """
class SelfDistill(Module):
    def __init__(self, model: Module, teacher: Module | None = None):
        super().__init__()
        self.model = model
        self.teacher = teacher or EMA(model)

    def post_step(self):
        self.teacher.update()
"""),
    "conditional-expression-gates-a-tower": ("ZG2", "ZG205", """
class Unet(Module):
    def __init__(self, dim=4, accept_time=True):
        super().__init__()
        self.time_mlp = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, dim)) if accept_time else None
        self.body = nn.Linear(dim, dim)

    def forward(self, x, times=None):
        t = self.time_mlp(times) if exists(self.time_mlp) and exists(times) else None
        return self.body(x) if t is None else self.body(x + t)
"""),
    "copied-member-is-a-tower": ("ZG2", "ZG205", """
class Unet(Module):
    def __init__(self, dim=4, accept_dest_time=False):
        super().__init__()
        self.time_mlp = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, dim))
        self.dest_time_mlp = None
        if accept_dest_time:
            self.dest_time_mlp = deepcopy(self.time_mlp)
        self.body = nn.Linear(dim, dim)

    def forward(self, x, times, s=None):
        t = self.time_mlp(times)
        if exists(s):
            t = t + self.dest_time_mlp(s)
        return self.body(x + t)
"""),
    "module-built-through-type-of-another": ("ZG1", "ZG103", """
class LoRA(Module):
    def __init__(self, base: Net, rank=4):
        super().__init__()
        self.base = base
        layer_type = type(self.base)
        self.lora_b = layer_type(rank)
        with torch.no_grad():
            for p in self.lora_b.parameters():
                p.zero_()
"""),
    "averager-handed-to-a-step": ("ZG1", "ZG101", """
from typing import Optional
from torch_ema import ExponentialMovingAverage


def take_step(model: nn.Module, batch, optimizer, ema: Optional[ExponentialMovingAverage]):
    model(batch).mean().backward()
    optimizer.step()
    if ema is not None:
        ema.update()
"""),
    "averages-swapped-in-for-evaluation": ("ZG1", "ZG101", """
from torch_ema import ExponentialMovingAverage


def validate(model: nn.Module, batch, ema: ExponentialMovingAverage):
    with ema.average_parameters():
        return model(batch).mean()
"""),
    "dataclass-field-holds-the-model": ("ZG1", "ZG108", STATE + """
        return {"model": state.model.state_dict(), "optimizer": state.optimizer.state_dict()}
"""),
    "wrapper-built-around-a-handed-model": ("ZG1", "ZG108", """
class Wrapper(Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)


class Trainer(Module):
    def __init__(self, net: Net):
        super().__init__()
        self.model = Wrapper(net)
        self.opt = torch.optim.Adam(net.parameters())

    def save(self, path):
        torch.save(self.model.state_dict(), path)
"""),
    "optional-input-skips-a-handed-network": ("ZG2", "ZG205", """
class Guided(Module):
    def __init__(self, net: Module, action_embedder: Module | None = None):
        super().__init__()
        self.net = net
        self.action_embedder = action_embedder

    def forward(self, x, action=None):
        if exists(action):
            x = x + self.action_embedder(action)
        return self.net(x)
"""),
    "coin-flip-skips-the-transformed-call": ("ZG2", "ZG202", MEAN_FLOW + """
        if random() < 0.5:
            return x
        out, rate = jvp(self.model, (x,), (t,))
        return out + rate
"""),
    # One branch runs the encoder once per sample, the other once: not the same calls both ways.
    "sliced-branch-runs-the-module-per-sample": ("ZG2", "ZG203", """
class Autoencoder(Module):
    def __init__(self, slicing=True):
        super().__init__()
        self.use_slicing = slicing
        self.encoder = Net()

    def forward(self, x):
        if self.use_slicing and x.shape[0] > 1:
            h = torch.cat([self.encoder(part) for part in x.split(1)])
        else:
            h = self.encoder(x)
        return h
"""),
}

LOOKALIKES = {
    # The name is rebound to a construction of a class that is no module (its settings): nothing built is copied.
    "rebound-to-a-setting": ("ZG1", """
class Settings:
    def __init__(self, beta=0.9):
        self.beta = beta


def make_settings(model, **kwargs):
    model = Settings(**kwargs)
    return deepcopy(model)
"""),
    # The alternative is built from a fresh module, not from the held model.
    "averager-of-a-fresh-module": ("ZG1", """
class SelfDistill(Module):
    def __init__(self, model: Module, teacher: Module | None = None):
        super().__init__()
        self.model = model
        self.teacher = default(teacher, nn.Identity())

    def post_step(self):
        self.teacher.eval()
"""),
    # Both alternatives of the conditional expression run the tower.
    "conditional-expression-runs-the-tower-both-ways": ("ZG2", """
class Unet(Module):
    def __init__(self, dim=4):
        super().__init__()
        self.time_mlp = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, dim))

    def forward(self, x, times=None):
        return self.time_mlp(times) if exists(times) else self.time_mlp(torch.zeros_like(x))
"""),
    # The presence of `cond` is asserted equal to the configuration's `cond_mlp`.
    "presence-tied-to-configuration": ("ZG2", """
class Unet(Module):
    def __init__(self, dim=4, accept_cond=False):
        super().__init__()
        self.cond_mlp = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, dim)) if accept_cond else None
        self.body = nn.Linear(dim, dim)

    def forward(self, x, cond=None):
        assert not (exists(cond) ^ exists(self.cond_mlp))
        if exists(cond):
            x = x + self.cond_mlp(cond)
        return self.body(x)
"""),
    # The optional input only changes arithmetic on the configuration-gated tower's output.
    "copied-member-run-on-every-rank": ("ZG2", """
class Unet(Module):
    def __init__(self, dim=4):
        super().__init__()
        self.time_mlp = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, dim))
        self.dest_time_mlp = deepcopy(self.time_mlp)
        self.body = nn.Linear(dim, dim)

    def forward(self, x, times, s=None):
        t = self.time_mlp(times) + self.dest_time_mlp(times)
        if exists(s):
            t = t * s
        return self.body(x + t)
"""),
    # The class of a setting builds a value; the module's own parameter is initialised in its own `__init__`.
    "type-of-a-setting": ("ZG1", """
class Scaled(Module):
    def __init__(self, base: Net, scale=2):
        super().__init__()
        self.base = base
        number = type(scale)
        self.factor = number(3)
        self.gain = nn.Parameter(torch.empty(4))
        nn.init.zeros_(self.gain)
"""),
    # A scheduler handed in is stepped: `step` is an update only for a weight-averaging class.
    "scheduler-handed-to-a-step": ("ZG1", """
def take_step(model: nn.Module, batch, optimizer, scheduler: torch.optim.lr_scheduler.LRScheduler):
    model(batch).mean().backward()
    optimizer.step()
    scheduler.step()
"""),
    # Only the optimizer field is read; it is no module.
    "dataclass-field-is-no-module": ("ZG1", STATE + """
        return {"optimizer": state.optimizer.state_dict()}
"""),
    # A module built from settings only, without parameters: its state dict holds nothing partitioned.
    "module-built-from-settings": ("ZG1", """
class Scale(Module):
    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, x):
        return x * self.k


class Trainer(Module):
    def __init__(self, net: Net):
        super().__init__()
        self.net = net
        self.scale = Scale(2)
        self.opt = torch.optim.Adam(net.parameters())

    def save(self, path):
        torch.save(self.scale.state_dict(), path)
"""),
    # The handed module is declared a single layer, and the optional input only scales the output.
    "optional-input-around-a-handed-layer": ("ZG2", """
class Guided(Module):
    def __init__(self, net: Module, proj: nn.Linear):
        super().__init__()
        self.net = net
        self.proj = proj

    def forward(self, x, scale=None):
        if exists(scale):
            x = self.proj(x) * scale
        return self.net(x)
"""),
    # Both branches run the model once: plainly or through `jvp`.
    "coin-flip-between-plain-and-transformed-call": ("ZG2", MEAN_FLOW + """
        if random() < 0.5:
            out, rate = self.model(x), torch.zeros(())
        else:
            out, rate = jvp(self.model, (x,), (t,))
        return out + rate
"""),
}


@pytest.mark.parametrize("name", sorted(HAZARDS))
def test_hazard_is_reported(name: str) -> None:
    family, code, source = HAZARDS[name]
    assert code in codes(source, family)


@pytest.mark.parametrize("name", sorted(LOOKALIKES))
def test_lookalike_is_clean(name: str) -> None:
    family, source = LOOKALIKES[name]
    assert codes(source, family) == []
