"""Classes that train a model they hold, module or not, and helpers whose summary says what they do to a model.

A trainer (an RL agent, a `Trainer(nn.Module)` that only wants buffers and `.to()`) holds a built model; its
methods run from the training loop on that model as ZeRO-3 left it, partitioned. What they do to it as a whole
(copy, state dict, clipping, writes of every parameter) counts also when done through a helper of the file or
of another file (`make_copy(self.model)`, `sync(src, dst)`, `clip(self.model.parameters(), c)`), and through a
wrapper that returns the model (`accelerator.unwrap_model(self.model).state_dict()`).
"""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

HEAD = """
import copy

import deepspeed
import torch
from torch import nn
from ema_pytorch import EMA
"""


def codes(source: str) -> list[str]:
    """The ZG1 codes zgen reports for a file made of `HEAD` and `source`."""
    return sorted(f.code for f in check_source("m.py", HEAD + textwrap.dedent(source)) if f.code.startswith("ZG1"))


MODULE_TRAINER = """
class Trainer(nn.Module):
    def __init__(self, vae: nn.Module, lr=1e-3):
        super().__init__()
        self.vae = vae
        self.opt = torch.optim.Adam(vae.parameters(), lr=lr)
        self.register_buffer("step", torch.zeros(1))

    def save(self, path):
{save}
"""

HAZARDS = {
    "module-trainer-saves-held-state-dict": ("ZG108", MODULE_TRAINER.format(save="""
        torch.save(self.vae.state_dict(), path)
""")),
    "module-trainer-averages-and-updates": ("ZG101", """
class Trainer(nn.Module):
    def __init__(self, vae: nn.Module):
        super().__init__()
        self.vae = vae
        self.ema = EMA(vae, beta=0.99)

    def train_step(self, x):
        self.vae(x).mean().backward()
        self.ema.update()
"""),
    "module-trainer-averages-a-handed-model": ("ZG105", """
class Trainer(nn.Module):
    def __init__(self, vae: nn.Module):
        super().__init__()
        self.vae = vae
        self.ema = EMA(vae, beta=0.99)
"""),
    "agent-loads-into-unwrapped-prepared-model": ("ZG108", """
class Agent:
    def __init__(self, model: nn.Module, accelerator):
        self.accelerator = accelerator
        self.model = accelerator.prepare(model)

    def load(self, path):
        self.accelerator.unwrap_model(self.model).load_state_dict(torch.load(path))
"""),
    "target-network-copied-by-helper": ("ZG105", """
def make_target(model):
    target = copy.deepcopy(model)
    return target


class DQN:
    def __init__(self, q_function: nn.Module):
        self.model = q_function
        self.target_model = make_target(self.model)
"""),
    "target-synced-by-state-dict-helper-through-lambdas": ("ZG108", """
def hard_copy(dst, src):
    dst.load_state_dict(src.state_dict())


def synchronize(src, dst, method):
    {"hard": lambda: hard_copy(dst, src)}[method]()


class DQN:
    def __init__(self, q_function: nn.Module):
        self.model = q_function
        self.target_model = q_function

    def sync_target_network(self):
        synchronize(src=self.model, dst=self.target_model, method="hard")
"""),
    "gradients-clipped-by-helper": ("ZG107", """
def clip_l2(parameters, max_norm):
    parameters = list(parameters)
    return torch.nn.utils.clip_grad_norm_(parameters, max_norm)


class DQN:
    def __init__(self, q_function: nn.Module, optimizer):
        self.model = q_function
        self.optimizer = optimizer

    def update(self, loss):
        loss.backward()
        clip_l2(self.model.parameters(), 1.0)
        self.optimizer.step()
"""),
    "line-search-writes-parameters-through-helper": ("ZG101", """
def replace_data(params, new_data):
    for param, new in zip(params, new_data):
        param.data.copy_(new)


class TRPO:
    def __init__(self, policy: nn.Module):
        self.policy = policy

    def update_policy(self, candidates):
        policy_params = list(self.policy.parameters())
        for new in candidates:
            replace_data(policy_params, new)
"""),
    "parameters-flattened-by-helper": ("ZG109", """
def flatten_all(vs):
    return torch.cat([torch.flatten(v) for v in vs])


class TRPO:
    def __init__(self, policy: nn.Module):
        self.policy = policy

    def update_policy(self):
        policy_params = list(self.policy.parameters())
        return flatten_all(policy_params)
"""),
    "target-network-state-copied-between-arguments": ("ZG108", """
def copy_param(target_link, source_link):
    target_link.load_state_dict(source_link.state_dict())
"""),
    "built-module-copies-itself-for-evaluation": ("ZG105", """
class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(1024, 4096)

    def copy_for_eval(self):
        vae_copy = copy.deepcopy(self.cpu())
        return vae_copy.eval()

    def forward(self, x):
        return self.enc(x)
"""),
}


@pytest.mark.parametrize("case", sorted(HAZARDS))
def test_hazard_is_found(case):
    code, source = HAZARDS[case]
    assert code in codes(source), case


LOOK_ALIKES = {
    "module-trainer-saves-inside-a-gather": MODULE_TRAINER.format(save="""
        with deepspeed.zero.GatheredParameters(list(self.vae.parameters())):
            torch.save(self.vae.state_dict(), path)
"""),
    "model-module-that-trains-nothing": """
class Codec(nn.Module):
    def __init__(self, encoder: nn.Module):
        super().__init__()
        self.encoder = encoder
        self.register_buffer("scale", torch.ones(1))

    def forward(self, x):
        return self.encoder(x) * self.scale

    def encoder_state(self):
        return self.encoder.state_dict()
""",
    "optimizer-built-from-the-model-is-no-model": """
class Agent:
    def __init__(self, model: nn.Module, lr):
        self.model = model
        self.optimizer = make_optimizer(model, lr)

    def save(self, path):
        torch.save(self.optimizer.state_dict(), path)
""",
    "helper-gathers-before-copying": """
def make_target(model):
    with deepspeed.zero.GatheredParameters(list(model.parameters())):
        return copy.deepcopy(model)


class DQN:
    def __init__(self, q_function: nn.Module):
        self.model = q_function
        self.target_model = make_target(self.model)
""",
    "helper-reads-only-flags-of-the-model": """
def describe(model, extra):
    return f"{type(model).__name__} training={model.training} {extra}"


class DQN:
    def __init__(self, q_function: nn.Module):
        self.model = q_function

    def log(self):
        print(describe(self.model, 1))
""",
    "helper-flattens-gradients-not-values": """
def flatten_all(vs):
    return torch.cat([torch.flatten(v) for v in vs])


class TRPO:
    def __init__(self, policy: nn.Module):
        self.policy = policy

    def update_policy(self, loss):
        grads = torch.autograd.grad(loss, list(self.policy.parameters()))
        return flatten_all(grads)
""",
    "optimizer-state-copied-between-arguments": """
def copy_state(target_optimizer, source_optimizer):
    target_optimizer.load_state_dict(source_optimizer.state_dict())
""",
    "built-module-copies-its-settings": """
class VAE(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.enc = nn.Linear(1024, 4096)

    def settings_for_eval(self):
        return copy.deepcopy(self.cfg)

    def forward(self, x):
        return self.enc(x)
""",
}


@pytest.mark.parametrize("case", sorted(LOOK_ALIKES))
def test_look_alike_is_clean(case):
    assert codes(LOOK_ALIKES[case]) == [], case


INITIALISERS = """
import numpy as np
import torch


def init_lecun_normal(tensor, scale=1.0):
    std = scale * np.sqrt(1.0 / tensor.shape[1])
    with torch.no_grad():
        return tensor.normal_(0, std)


def fan_in(tensor):
    return tensor.shape[1]

"""

MLP = """
import torch.nn as nn

from .initializers import {name}


class MLP(nn.Module):
    def __init__(self, in_size, out_size):
        super().__init__()
        self.output = nn.Linear(in_size, out_size)
        self.scale = {name}(self.output.weight)

    def forward(self, x):
        return self.output(x) * self.scale
"""


@pytest.mark.parametrize(
    ("name", "expected"), [("init_lecun_normal", ["ZG103"]), ("fan_in", [])]
)
def test_an_imported_helper_that_writes_its_argument_initialises_the_child(tmp_path, name, expected):
    """`init_lecun_normal(self.output.weight)` from the package's initialisers ends in `tensor.normal_()`: the
    built child's weight is written in `__init__` (ZG103); a helper that only reads the size writes nothing."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "initializers.py").write_text(INITIALISERS)
    path = package / "mlp.py"
    source = MLP.format(name=name)
    path.write_text(source)
    found = sorted(f.code for f in check_source(str(path), source) if f.code.startswith("ZG1"))
    assert found == expected


SCRIPT = """
from accelerate import Accelerator


def main(model, optimizer):
    accelerator = Accelerator()
    {prepare}
    ema = EMA(accelerator.unwrap_model(model), beta=0.999)
    return ema
"""


@pytest.mark.parametrize(
    ("prepare", "expected"),
    [("model, optimizer = accelerator.prepare(model, optimizer)", ["ZG105"]),
     ("optimizer = accelerator.prepare(optimizer)", [])],
    ids=["average-of-the-prepared-model", "average-of-a-model-never-prepared"],
)
def test_a_weight_average_built_in_a_script(prepare, expected):
    """`EMA(accelerator.unwrap_model(model))` after `accelerator.prepare(model)` copies the partitioned model."""
    assert codes(SCRIPT.format(prepare=prepare)) == expected
