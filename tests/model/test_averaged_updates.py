"""A module's own method that updates a weight average it keeps, or blends through a dict of a model's named
parameters, computes with its children's parameters: a trainer calling it is ZG303 at the call (h-ema)."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found_in_package

WRAP = '''
import torch
from torch import nn
from ema_pytorch import EMA


class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        return self.proj(x)


class Wrap(nn.Module):
    def __init__(self, model: nn.Module, beta=0.99):
        super().__init__()
        self.policy = model
        self.ref = EMA(model, beta=beta)
        self.register_buffer("steps", torch.zeros(()))

    def update_ema(self):
        self.ref.update()

    def sync(self):
        self.ref.copy_params_from_model_to_ema()

    def bump(self):
        self.steps += 1

    def forward(self, x):
        return self.policy(x) - self.ref(x)


class Trainer:
    def __init__(self, d, data):
        self.model = Wrap(Net(d))
        self.data = data

    def train(self):
        self.model.sync()
        for x in self.data:
            self.model(x).sum().backward()
            self.model.update_ema()
            self.model.bump()
'''

EMA_MODULE = '''
from copy import deepcopy
import torch
from torch import nn


class EMA(nn.Module):
    def __init__(self, model, decay):
        super().__init__()
        self.model = model
        self.decay = decay
        self.register_buffer("accum", torch.tensor(1.0))
        self.average = deepcopy(self.model)

    @torch.no_grad()
    def update(self):
        self.accum *= self.decay
        model_params = dict(self.model.named_parameters())
        average_params = dict(self.average.named_parameters())
        for name, param in model_params.items():
            average_params[name].mul_(self.decay).add_((1 - self.decay) * param)

    def names(self):
        model_params = dict(self.model.named_parameters())
        return sorted(model_params)

    def forward(self, *args):
        return self.model(*args) if self.training else self.average(*args)
'''

MAIN = '''
import torch
from torch import nn
from .ema import EMA


class Latents(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.normu = nn.Parameter(torch.zeros(n, d))

    def forward(self):
        return self.normu


class Model(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.latents = EMA(Latents(n, d), 0.99)

    def forward(self):
        return self.latents().sum()


class Imagine(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.model = Model(n, d)

    def train_step(self):
        self.model().backward()
        self.model.latents.update()
        self.model.latents.names()

    def forward(self):
        for _ in range(10):
            self.train_step()
'''


def test_a_method_updating_a_library_average_is_a_use_of_the_children(tmp_path: Path) -> None:
    found = found_in_package(tmp_path, {"wrap.py": WRAP}, "wrap.py", prefix="ZG303")
    assert ("ZG303", 42) in found  # `self.model.sync()`: copies the model's parameters into the average
    assert ("ZG303", 45) in found  # `self.model.update_ema()`: blends them in
    assert ("ZG303", 46) not in found  # `bump()` adds to a buffer


def test_a_dict_of_named_parameters_hands_out_the_parameters(tmp_path: Path) -> None:
    found = found_in_package(tmp_path, {"ema.py": EMA_MODULE, "main.py": MAIN}, "main.py", prefix="ZG303")
    assert ("ZG303", 32) in found  # `update()` reads `model_params.items()` and writes `average_params[name]`
    assert ("ZG303", 33) not in found  # `names()` lists the dict's keys only


WALKED = '''
from copy import deepcopy
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        return self.proj(x)


class Agent:
    def __init__(self, d):
        self.model = Net(d)
        self.target = deepcopy(self.model)

    def sync(self):
        update_ema_parameters(self.target, self.model, 0.99)

    def names(self):
        return parameter_names(self.model)


def update_ema_parameters(ema_net, net, alpha):
    for ema_module, module in zip(ema_net.modules(), net.modules()):
        for (_, p_ema), (_, p) in zip(ema_module.named_parameters(recurse=False), module.named_parameters(recurse=False)):
            p_ema.mul_(alpha).add_(p.data, alpha=1 - alpha)


def parameter_names(net):
    return [name for module in net.modules() for name, _ in module.named_parameters(recurse=False)]
'''


def test_the_parameters_of_each_module_a_walk_yields_are_the_arguments(tmp_path: Path) -> None:
    found = found_in_package(tmp_path, {"agent.py": WALKED}, "agent.py", prefix="ZG1")
    assert ("ZG101", 22) in found  # `sync` writes the target's parameters, module by module
    assert not {line for _, line in found if line == 25}  # `names` lists their names only


STATES = '''
import torch


def soft_copy(target_link, source_link, tau):
    target_dict = target_link.state_dict()
    source_dict = source_link.state_dict()
    for k, target_value in target_dict.items():
        target_value.mul_(1 - tau)
        target_value.add_(tau * source_dict[k])


def averaged_copy(target_link, source_link, tau):
    copied = {k: v.clone() for k, v in target_link.state_dict().items()}
    for k, value in copied.items():
        value.mul_(1 - tau)
    return copied


def lower_lr(optimizer, factor):
    state = optimizer.state_dict()
    for group in state["param_groups"]:
        group["lr"] *= factor
    optimizer.load_state_dict(state)
'''


def test_an_argument_whose_state_dict_values_are_written_in_place_is_a_module(tmp_path: Path) -> None:
    found = found_in_package(tmp_path, {"copy_param.py": STATES}, "copy_param.py", prefix="ZG1")
    assert ("ZG101", 9) in found  # a module's state dict holds its tensors: the parameters written
    assert not {line for _, line in found if line > 11}  # a copy of them; an optimizer's state dict
