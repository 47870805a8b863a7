"""Gradients set by hand on a built model's parameters (blind9 machin ars.py:638, session 15's ZG1 cluster).

The fact: ZeRO-3's optimizer steps from the engine's own partitioned gradient buffers, never from `p.grad` of the
module's parameters. Code outside the model that sets those gradients to values of its own (`p.grad = delta`, an
evolution strategy's estimate or a meta-learner's update; `p.grad += g`; `p.grad.copy_(g)`, `p.grad.mul_(s)`) sets
a gradient nothing steps from: ZG107, at the write or at the call handing the model to a helper that writes.

Safe look-alikes: clearing the gradients (`p.grad = None`, `p.grad.zero_()`: what the engine does itself), the
gradient of a tensor that is no parameter, a model the function builds itself (no `zero.Init`, whole gradients).
"""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import WIDE_NET, found_in_package

NETS = """
import torch.nn as nn

""" + WIDE_NET

HELPERS = """
def apply_updates(params, updates):
    for p, u in zip(params, updates):
        p.grad = u


def rescale(model, s):
    for p in model.parameters():
        if p.grad is not None:
            p.grad.data.mul_(s)


def clear(model):
    for p in model.parameters():
        p.grad = None
    for p in model.parameters():
        if p.grad is not None:
            p.grad.zero_()
"""

AGENT = """
import torch
import torch.nn as nn
from .nets import Net
from .helpers import apply_updates, rescale, clear


class Searcher:
    def __init__(self, actor: Net):
        self.actor = actor

    def estimate(self, deltas):
        for name, param in self.actor.named_parameters():
            g = param
            g.grad = deltas[name]

    def accumulate(self, g):
        for p in self.actor.parameters():
            p.grad += g

    def handed(self, updates):
        apply_updates(self.actor.parameters(), updates)
        rescale(self.actor, 0.5)

    def reset(self):
        clear(self.actor)
        for p in self.actor.parameters():
            p.grad = None

    def own_net(self, updates):
        net = nn.Linear(4, 4)
        for p, u in zip(net.parameters(), updates):
            p.grad = u

    def of_input(self, g):
        y = torch.zeros(3, requires_grad=True)
        y.grad = g
        return y
"""


def _lines(source: str, needles: list[str]) -> list[int]:
    lines = source.splitlines()
    return [next(i for i, text in enumerate(lines, 1) if needle in text) for needle in needles]


def test_gradients_set_by_hand_are_found(tmp_path: Path) -> None:
    files = {"nets.py": NETS, "helpers.py": HELPERS, "agent.py": AGENT}
    got = found_in_package(tmp_path, files, "agent.py", prefix="ZG107")
    expected = _lines(AGENT, ["g.grad = deltas", "p.grad += g", "apply_updates(self.actor", "rescale(self.actor"])
    assert sorted(line for _, line in got) == expected


def test_helper_writes_are_found_in_their_file(tmp_path: Path) -> None:
    files = {"nets.py": NETS, "helpers.py": HELPERS, "agent.py": AGENT}
    got = found_in_package(tmp_path, files, "helpers.py", prefix="ZG107")
    # (`params` alone is no known parameter iterable in its own file: found at the caller)
    assert sorted(line for _, line in got) == _lines(HELPERS, ["p.grad.data.mul_(s)"])


def test_cleared_gradients_and_plain_tensors_stay_clean(tmp_path: Path) -> None:
    files = {"nets.py": NETS, "helpers.py": HELPERS, "agent.py": AGENT}
    got = found_in_package(tmp_path, files, "agent.py", prefix="ZG1")
    quiet = _lines(AGENT, ["clear(self.actor)", "p.grad = None", "p.grad = u", "y.grad = g"])
    assert not [line for _, line in got if line in quiet]


FREEZE = """
import torch
from torch import nn


def cancel_gradients_last_layer(epoch, model, freeze_last_layer):
    if epoch >= freeze_last_layer:
        return
    for n, p in model.named_parameters():
        if "last_layer" in n:
            p.grad = None


def zero_all(model):
    for p in model.parameters():
        if p.grad is not None:
            p.grad = None


class Trainer:
    def __init__(self, model: nn.Module, freeze_epochs=1):
        self.model = model
        self.freeze_epochs = freeze_epochs

    def after_backward(self, epoch):
        if epoch < self.freeze_epochs:
            for name, p in self.model.named_parameters():
                if "prototypes" in name:
                    p.grad = None

    def step(self, epoch):
        cancel_gradients_last_layer(epoch, self.model, 1)
        zero_all(self.model)

    def reset(self):
        for p in self.model.parameters():
            if p.requires_grad:
                p.grad = None
"""


def test_gradients_cleared_for_the_parameters_a_test_picks_are_found(tmp_path: Path) -> None:
    # (DINO's cancel_gradients_last_layer, blind12 pl_bolts swav_module.py:197's freeze of the prototypes)
    got = found_in_package(tmp_path, {"train.py": FREEZE}, "train.py", prefix="ZG1")
    expected = _lines(FREEZE, ['if "last_layer" in n:', 'if "prototypes" in name:', "cancel_gradients_last_layer(epoch, self.model"])
    assert sorted(line for code, line in got if code == "ZG107") == sorted([expected[0] + 1, expected[1] + 1, expected[2]])
    quiet = _lines(FREEZE, ["zero_all(self.model)", "if p.requires_grad:"])
    assert not [line for _, line in got if line in quiet or line in (quiet[1] + 1, _lines(FREEZE, ["if p.grad is not None"])[0] + 1)]


OWN = """
import torch
from torch import nn


class Searcher(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.net = nn.Linear(d, d)

    def forward(self, x):
        return self.net(x)

    def es_step(self, deltas):
        for p, d in zip(self.parameters(), deltas):
            p.grad = d

    def clear(self):
        for p in self.parameters():
            p.grad = None
"""


def test_a_modules_own_method_setting_its_gradients_is_found(tmp_path: Path) -> None:
    got = found_in_package(tmp_path, {"search.py": OWN}, "search.py", prefix="ZG1")
    assert got == [("ZG107", _lines(OWN, ["p.grad = d"])[0])]


def test_a_gradient_bound_to_a_local_and_then_measured_is_read(tmp_path: Path) -> None:
    # (titok's `log_grad_norm`: `grads = param.grad.detach().data` ... `grads.norm(p=2)`; a local bound again before
    # its use holds another value)
    source = """
import torch


def log_grad_norm(model, accelerator, step):
    for name, param in model.named_parameters():
        if param.grad is not None:
            grads = param.grad.detach().data
            accelerator.log({name: (grads.norm(p=2) / grads.numel()).item()}, step=step)


def grad_shapes(model):
    for name, param in model.named_parameters():
        grads = param.grad
        grads = torch.zeros(3)
        print(grads.norm(), grads.shape)
"""
    assert found_in_package(tmp_path, {"logs.py": source}, "logs.py", prefix="ZG1") == [("ZG109", 8)]
