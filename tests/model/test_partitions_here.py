"""A function, or a class, partitions the model itself only when a call in it hands a model to a partitioning
call (`deepspeed.initialize(model=m)`, `accelerator.prepare(model, opt)`) or builds one under `zero.Init`
(`script.partitions_here`). Text that only looks like one (`accelerator.prepare(loader, scheduler)`, a weight
initialiser named `initialize`, a class's own `self._initialize(...)`) leaves the held model partitioned elsewhere:
what the code does to it is judged as in any code handed or holding one (h-zg1fde)."""

from __future__ import annotations

import textwrap

from zgen.model import check_source


def _found(source: str) -> set[tuple[str, int]]:
    return {(f.code, f.line) for f in check_source("model.py", textwrap.dedent(source))}


# A trainer preparing only its data and schedule in its loop: the EMA update, the deep copy and the parameter count
# there reach the model partitioned before (f5_tts's `Trainer.train`).
PREPARES_ONLY_DATA = """
import copy
from ema_pytorch import EMA

class Trainer:
    def __init__(self, model, accelerator):
        self.model = model
        self.accelerator = accelerator
        self.ema = EMA(model)

    def train(self, loader, scheduler):
        loader, scheduler = self.accelerator.prepare(loader, scheduler)
        for batch in loader:
            self.ema.update()
            target = copy.deepcopy(self.model)
            n = sum(p.numel() for p in self.model.parameters())

class Approximator:
    def __init__(self, network, std):
        self.network = network
        self._initialize(std)

    def _initialize(self, std):
        self.std = std

    def diff(self):
        return [p.grad.data.detach().cpu() for p in self.network.parameters()]

def initialize(module, std):
    for p in module.parameters():
        p.data.normal_(0, std)

def run(model, std):
    initialize(model, std)
    return copy.deepcopy(model)
"""


def test_code_that_hands_no_model_to_a_wrapper_is_judged_like_any_holder():
    found = _found(PREPARES_ONLY_DATA)
    assert {("ZG101", 14), ("ZG105", 15), ("ZG102", 16)} <= found  # in the loop after `prepare(loader, scheduler)`
    assert ("ZG109", 27) in found  # a class whose constructor calls its own `_initialize`
    assert {("ZG101", 34), ("ZG105", 35)} <= found  # a function calling the file's weight initialiser `initialize`


# ... but code before the wrapping call that hands the model over runs on the unpartitioned model (whatever the
# model's local is called), and what follows is the script rules'.
WRAPS_THE_MODEL = """
import copy

def before_wrap(model, accelerator, optimizer):
    target = copy.deepcopy(model)
    model, optimizer = accelerator.prepare(model, optimizer)
    return model, target

def before_wrap_named(net_g, accelerator, optimizer):
    target = copy.deepcopy(net_g)
    net_g, optimizer = accelerator.prepare(net_g, optimizer)
    return net_g, target

def after_wrap(model, accelerator, loader, optimizer):
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    return copy.deepcopy(model)
"""


def test_code_wrapping_the_model_is_left_to_the_script_rules():
    found = _found(WRAPS_THE_MODEL)
    assert found == {("ZG105", 16)}  # the copies before the wrap (lines 4 and 9) are safe
