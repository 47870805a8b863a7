"""A built model, or its parameters, handed to helpers outside the model classes (`zgen.model.analysis.handed`)."""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

HEAD = """
import contextlib
import copy
from typing import Iterable

import deepspeed
import torch
from torch import nn
"""


def codes(source: str) -> list[str]:
    """The ZG1 codes zgen reports for a file made of `HEAD` and `source`."""
    return [f.code for f in check_source("m.py", HEAD + textwrap.dedent(source)) if f.code.startswith("ZG1")]


HAZARDS = {
    "ema-copy-into-parameter-iterable": ("ZG101", """
class Ema:
    def __init__(self, decay):
        self.decay = decay
        self.shadow = []

    def copy_to(self, parameters: Iterable[torch.nn.Parameter]) -> None:
        parameters = list(parameters)
        for s, param in zip(self.shadow, parameters):
            param.data.copy_(s)
"""),
    "ema-store-clones-by-argument-name": ("ZG109", """
class Ema:
    def store(self, parameters):
        self.saved = [p.detach().cpu().clone() for p in parameters]
"""),
    "bulk-copy-into-parameter-data": ("ZG101", """
def restore_into(parameters: Iterable[nn.Parameter], tensors):
    torch._foreach_copy_([p.data for p in parameters], tensors)
"""),
    "holder-counts-its-model-parameters": ("ZG102", """
class Trainer:
    def __init__(self, model: nn.Module, args):
        self.model = model
        self.args = args

    def trainable(self):
        return sum(p.numel() for p in self.model.parameters() if p.requires_grad)
"""),
    "apply-outside-zero-init-writes": ("ZG101", """
def to_half(model):
    def cast(layer):
        if isinstance(layer, nn.Linear):
            layer.weight.data = layer.weight.data.half()

    model.apply(cast)
"""),
    "decay-groups-by-dimension": ("ZG102", """
def param_groups(model: nn.Module, wd):
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if param.ndim <= 1:
            no_decay.append(param)
        else:
            decay.append(param)
    return [{"params": no_decay, "weight_decay": 0.0}, {"params": decay, "weight_decay": wd}]
"""),
    # Classes that hold a model without being modules (`holds.held_attributes`): an RL agent, a trainer, an
    # optimizer wrapper. The model is handed in (annotated or named), copied from one, or used as one.
    "agent-copies-its-policy-into-a-target": ("ZG105", """
class Agent:
    def __init__(self, policy: nn.Module):
        self.policy = policy
        self.target = copy.deepcopy(policy)
"""),
    "wrapper-clips-the-module-it-steps": ("ZG107", """
class Step:
    def __init__(self, optim, module: nn.Module):
        self.optim, self.module = optim, module

    def step(self, loss):
        loss.backward()
        nn.utils.clip_grad_norm_(self.module.parameters(), 1.0)
        self.optim.step()
"""),
    "trainer-saves-its-model-state": ("ZG108", """
class Trainer:
    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer

    def save(self, path):
        torch.save(self.model.state_dict(), path)
"""),
    "target-loaded-from-the-online-network": ("ZG108", """
class Agent:
    def __init__(self, critic, target_critic):
        self.critic, self.target = critic, target_critic

    def sync(self):
        self.target.load_state_dict(self.critic.state_dict())
"""),
    "flat-vector-written-into-the-actor": ("ZG101", """
class Trpo:
    def __init__(self, actor: nn.Module):
        self.actor = actor

    def step(self, flat):
        torch.nn.utils.vector_to_parameters(flat, self.actor.parameters())
"""),
    "library-average-updated-from-the-model": ("ZG101", """
from ema_pytorch import EMA

class Trainer:
    def __init__(self, model):
        self.model = model
        self.ema = EMA(model, beta=0.99)

    def step(self):
        self.ema.update()
"""),
    "target-found-by-its-parameters-walk": ("ZG101", """
class Pairs:
    def __init__(self):
        self.pairs = []

    def hard_update(self):
        for target, source in self.pairs:
            for t, s in zip(target.parameters(), source.parameters()):
                t.data.copy_(s.data)
"""),
    # the averaged model's parameters looked up by name in a dict of them, and lerped into in place
    "ema-update-through-a-name-to-parameter-dict": ("ZG101", """
@torch.no_grad()
def ema_update(model, averaged_model, decay):
    model_params = dict(model.named_parameters())
    averaged_params = dict(averaged_model.named_parameters())
    for name, param in model_params.items():
        averaged_params[name].lerp_(param, 1 - decay)
"""),
    # a factory (of any class) builds the model it returns, then initialises one of its parameters: under zero.Init
    # the actor is partitioned as soon as its constructor returns
    "factory-initialises-the-module-it-returns": ("ZG103", """
class Actor(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        self.mu = nn.Linear(d, n)
        self.sigma_param = nn.Parameter(torch.zeros(n, 1))


class ActorFactory:
    def __init__(self, d, n):
        self.d, self.n = d, n

    def create_module(self, device):
        actor = Actor(self.d, self.n).to(device)
        torch.nn.init.constant_(actor.sigma_param, -0.5)
        return actor
"""),
    # a helper given the built actor walks one of its children's modules and scales their weights in place
    "walk-of-a-childs-modules-writes": ("ZG101", """
def scale_last_layer(actor: nn.Module) -> None:
    for m in actor.mu.modules():
        if isinstance(m, nn.Linear):
            m.weight.data.copy_(0.01 * m.weight.data)
"""),
}


@pytest.mark.parametrize("case", sorted(HAZARDS))
def test_hazard_is_found(case):
    code, source = HAZARDS[case]
    assert code in codes(source), case


SAFE = {
    # Gathered through a context manager chosen by a ZeRO-3 test.
    "gathered-through-a-chosen-context": """
class Ema:
    def step(self, parameters: Iterable[torch.nn.Parameter], zero3: bool):
        for s, param in zip(self.shadow, parameters):
            cm = deepspeed.zero.GatheredParameters(param) if zero3 else contextlib.nullcontext()
            with cm:
                s.sub_(0.1 * (s - param))
""",
    # Only the objects are collected, tagged and checked: no values, no sizes.
    "collect-tag-and-check": """
def groups(model, extra):
    seen, other = set(), []
    for p in model.parameters():
        p.expert = True
        if p.requires_grad and p not in seen:
            other.append(p)
            seen.add(id(p))
    for p in extra:
        print(p.exists())
    return other
""",
    # Configuration arguments are not models.
    "model-config-is-not-a-model": """
def describe(model_config: dict, parameters_count: int):
    return {k: v for k, v in model_config.items()}
""",
    # An optimizer's state is not a model's, however it is held; a model built here is a plain module; the
    # trainer's DeepSpeed branch consolidates, its other branch runs without ZeRO.
    "optimizer-state-and-a-model-built-here": """
class Trainer:
    def __init__(self, model, optimizer: torch.optim.Optimizer):
        self.model, self.optimizer = model, optimizer

    def save(self, path):
        torch.save(self.optimizer.state_dict(), path)

    def export(self, path):
        probe = nn.Linear(4, 4)
        torch.save(probe.state_dict(), path)

    def save_model(self, path):
        if self.is_deepspeed_enabled:
            self.accelerator.save_state(path)
        else:
            torch.save(self.model.state_dict(), path)
""",
    # An optimizer is handed the storage it updates by design.
    "optimizer-subclass": """
class Sgd(torch.optim.Optimizer):
    def __init__(self, params: Iterable[nn.Parameter], lr):
        super().__init__(params, {"lr": lr})
        for p in params:
            p.numel()
""",
    # the same dicts, compared by their names and flags only
    "name-to-parameter-dicts-compared-by-name": """
def check_same(model, averaged_model):
    model_params = dict(model.named_parameters())
    averaged_params = dict(averaged_model.named_parameters())
    assert model_params.keys() == averaged_params.keys()
    for name, param in model_params.items():
        averaged_params[name].requires_grad_(False)
        assert param.dtype == averaged_params[name].dtype
""",
    # the same factory initialises through `apply`, which zero.Init gathers module by module
    "factory-initialises-through-apply": """
class Actor(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        self.mu = nn.Linear(d, n)
        self.sigma_param = nn.Parameter(torch.zeros(n, 1))


def init_orthogonal(module):
    if isinstance(module, nn.Linear):
        nn.init.orthogonal_(module.weight)


class ActorFactory:
    def __init__(self, d, n):
        self.d, self.n = d, n

    def create_module(self, device):
        actor = Actor(self.d, self.n).to(device)
        actor.apply(init_orthogonal)
        return actor
""",
    # the same walk of a child's modules, reading only flags and dtypes
    "walk-of-a-childs-modules-reads-flags": """
def frozen_layers(actor: nn.Module) -> list:
    found = []
    for m in actor.mu.modules():
        if isinstance(m, nn.Linear) and not m.weight.requires_grad:
            found.append((m, m.weight.dtype))
    return found
""",
}


@pytest.mark.parametrize("case", sorted(SAFE))
def test_look_alike_is_clean(case):
    assert codes(SAFE[case]) == [], case


# Script code after `deepspeed.initialize`: a size read inside `GatheredParameters` sees the whole parameter. ZG101
# and ZG102 filter the same `ParamAccess` records now; ZG102 used to report the gathered read too.
GATHERED_SIZE = """
def main(model, cfg):
    engine, *_ = deepspeed.initialize(model=model, config=cfg)
    params = list(engine.module.parameters())
    with deepspeed.zero.GatheredParameters(params):
        total = sum(p.numel() for p in engine.module.parameters())
    return total, sum(p.numel() for p in engine.module.parameters())
"""


def test_a_size_read_inside_gathered_parameters_in_a_script_is_not_flagged():
    found = [f for f in check_source("m.py", HEAD + textwrap.dedent(GATHERED_SIZE)) if f.code == "ZG102"]
    assert [f.line for f in found] == [HEAD.count("\n") + 7]
