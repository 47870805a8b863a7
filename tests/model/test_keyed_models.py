"""A mapping's entry under a named constant that the package stores a built model under (`state[MODEL]`) is that
model, in every file of the package (`program/keyed.py`); entries under other constants, and constant-keyed dict
literals' other entries, are what was stored there."""

from __future__ import annotations

from tests.model.package_check import found, found_in_package, write_package

KEYS = """
def state_key(name):
    return name

MODEL = state_key("model")
OPTIMIZER = state_key("optimizer")
WEIGHTS = state_key("weights")
"""

TRIAL = """
import pkg


class Trial(object):
    def __init__(self, model, optimizer=None, callbacks=()):
        self.state = {}
        self.state.update({pkg.MODEL: model if model is not None else None, pkg.OPTIMIZER: optimizer})
        self.callbacks = callbacks

    def load_state_dict(self, sd):
        self.state[pkg.MODEL].load_state_dict(sd[pkg.MODEL])
        self.state[pkg.OPTIMIZER].load_state_dict(sd[pkg.OPTIMIZER])
"""

CALLBACKS = """
import copy
import torch
import pkg
from pkg import MODEL, OPTIMIZER, WEIGHTS


class Checkpointer(object):
    def save(self, state, path):
        torch.save(state[pkg.MODEL].state_dict(), path)

    def save_optimizer(self, state, path):
        torch.save(state[OPTIMIZER].state_dict(), path)


class Clip(object):
    def __init__(self):
        self.params = None

    def on_start(self, state):
        self.params = filter(lambda p: p.requires_grad, state[MODEL].parameters())

    def on_backward(self, state):
        torch.nn.utils.clip_grad_norm_(self.params, 1.0)


def clone(state):
    return copy.deepcopy(state[MODEL])


def clone_weights(ckpt):
    return copy.deepcopy(ckpt[WEIGHTS])
"""


def _package(tmp_path):
    return write_package(tmp_path, {"keys.py": KEYS, "trial.py": TRIAL, "callbacks.py": CALLBACKS},
                         init="from .keys import MODEL, OPTIMIZER, WEIGHTS\n")


def test_callbacks_reach_the_model_stored_under_a_constant_key_in_another_file(tmp_path):
    hits = found(_package(tmp_path) / "callbacks.py", "ZG1")
    assert ("ZG108", 10) in hits  # the model's state dict saved
    assert ("ZG107", 24) in hits  # the parameters kept by `on_start`, clipped by `on_backward`
    assert ("ZG105", 28) in hits  # the model deep-copied in a free function


def test_entries_under_other_constant_keys_stay_clean(tmp_path):
    hits = found(_package(tmp_path) / "callbacks.py", "ZG1")
    assert not [line for _code, line in hits if line in (13, 20, 32)]  # optimizer, requires_grad, a state dict


def test_the_trial_loads_into_the_model_it_keeps_under_the_key(tmp_path):
    hits = found(_package(tmp_path) / "trial.py", "ZG1")
    assert ("ZG108", 12) in hits
    assert not [line for _code, line in hits if line == 13]  # the optimizer's state loaded


def test_a_key_no_file_stores_a_model_under_is_no_model(tmp_path):
    trial = TRIAL.replace("pkg.MODEL: model if model is not None else None", "pkg.MODEL: None")
    hits = found_in_package(tmp_path, {"keys.py": KEYS, "trial.py": trial, "callbacks.py": CALLBACKS.replace(
        "state[MODEL].parameters()", "state[MODEL]")}, "callbacks.py", prefix="ZG1")
    assert hits == []


def test_a_dict_literal_with_constant_keys_keeps_each_entry(tmp_path):
    source = '''
    import torch


    class Runner:
        def __init__(self, model, optimizer):
            self.state = {"model": model, "optimizer": optimizer, "step": 0}

        def checkpoint(self, path):
            torch.save(self.state["model"].state_dict(), path)
            torch.save(self.state["optimizer"].state_dict(), path)
    '''
    assert found_in_package(tmp_path, {"runner.py": source}, "runner.py", prefix="ZG1") == [("ZG108", 10)]


def test_apply_of_a_bound_method_that_writes_each_module(tmp_path):
    source = '''
    import torch
    from torch import nn


    class Lsuv:
        def orth(self, m):
            if isinstance(m, nn.Linear):
                m.weight.data = torch.zeros_like(m.weight.data)

        def count(self, m):
            self.n = getattr(self, "n", 0) + 1

        def init_model(self, model, data):
            model.apply(self.count)
            model.apply(self.orth)
            return model
    '''
    assert found_in_package(tmp_path, {"lsuv.py": source}, "lsuv.py", prefix="ZG1") == [("ZG101", 16)]


INITIALISERS = """
from torch.nn import init
import pkg


class WeightInit(object):
    \"\"\"Runs the initialiser on each module when on_init is called.\"\"\"

    def __init__(self, initialiser=lambda module: module, modules=None):
        self.initialiser = initialiser
        self.modules = modules

    def on_init(self, state):
        if self.modules is None:
            self.modules = state[pkg.MODEL].modules()
        for m in self.modules:
            self.initialiser(m)


class KaimingNormal(WeightInit):
    def __init__(self, a=0, modules=None):
        def initialiser(module):
            init.kaiming_normal_(module.weight.data, a=a)
        super(KaimingNormal, self).__init__(initialiser, modules=modules)


class Reporter(object):
    def __init__(self, report=print):
        self.report = report

    def on_init(self, state):
        for m in state[pkg.MODEL].modules():
            self.report(m)


class Named(Reporter):
    def __init__(self):
        def report(module):
            print(type(module).__name__)
        super().__init__(report)
"""


def test_a_callable_a_subclass_hands_the_constructor_runs_on_each_module(tmp_path):
    package = write_package(tmp_path, {"keys.py": KEYS, "trial.py": TRIAL, "init.py": INITIALISERS},
                            init="from .keys import MODEL, OPTIMIZER, WEIGHTS\n")
    assert found(package / "init.py", "ZG1") == [("ZG101", 17)]  # not the reporter's print (line 32)


OPTIMIZERS = """
import torch
from torch.optim import Optimizer


class Kept(Optimizer):
    def __init__(self, params, lr=1.0):
        super().__init__(params, dict(lr=lr))
        self._params = self.param_groups[0]["params"]

    def _set_param(self, params_data):
        for p, pdata in zip(self._params, params_data):
            p.copy_(pdata)

    def _flat_grad(self):
        return torch.cat([p.new(4).zero_() for p in self._params])

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.add_(p.grad, alpha=-group["lr"])
"""


def test_an_optimizer_keeps_the_models_parameters_its_constructor_took_from_the_groups(tmp_path):
    # (the ZeRO-3 optimizer swaps each group's list for its partitions; `step`'s walk of the groups is safe, and
    # `p.new(4)` makes a fresh tensor of p's dtype and device)
    assert found_in_package(tmp_path, {"optim.py": OPTIMIZERS}, "optim.py", prefix="ZG1") == [("ZG101", 13)]
