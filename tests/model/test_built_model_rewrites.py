"""Writes on the built model after construction, by code outside the model classes (h-zg1b): an `apply` handed a
`partial` or a lambda of an initialiser, an initialiser or loader by name (`init_head(model)`, an agent's
`_init_learn`, `load_foundations(model, src)`) handed the model, and a loop over joined walks of its submodules.
Each a hazard and a safe look-alike."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

from package_check import found_in_package


def _found(source: str, path: str = "train.py") -> list[tuple[str, int]]:
    return sorted((f.code, f.line) for f in check_source(path, textwrap.dedent(source)))


def _found_in_package(tmp_path, helper: tuple[str, str], checked: str) -> list[tuple[str, int]]:
    """The findings of `checked` (as `train.py`) in a package beside one helper file (name, source)."""
    return sorted(found_in_package(tmp_path, {f"{helper[0]}.py": helper[1], "train.py": checked}, "train.py"))


# `apply` runs the callable on every submodule of the built model: a `partial` or a lambda of an initialiser
# writes each module's partitioned parameters as the initialiser named alone does.
APPLY_WRAPPED = """
from functools import partial
from torch import nn

def init_fn(m, std):
    if isinstance(m, nn.Linear):
        nn.init.normal_(m.weight, std=std)

def setup(model, std):
    model.apply(partial(init_fn, std=std))
    return model

class Runner:
    def __init__(self, model):
        self.model = model

    def run(self):
        self.model.apply(lambda m: init_fn(m, 0.1))
"""

INITS = """
from torch import nn

def init_fn(m, std=0.02):
    if isinstance(m, nn.Linear):
        nn.init.normal_(m.weight, 0, std)
"""

APPLY_IMPORTED = """
from functools import partial
from .inits import init_fn

def main(model):
    model.apply(partial(init_fn, std=0.1))
"""

# ... but a module's own `apply` in its `__init__` runs under `zero.Init`, whose `apply` gathers each module.
APPLY_IN_CONSTRUCTION = """
from functools import partial
from torch import nn

def init_fn(m, std=0.02):
    if isinstance(m, nn.Linear):
        nn.init.normal_(m.weight, std=std)

class Net(nn.Module):
    def __init__(self, std):
        super().__init__()
        self.fc = nn.Linear(1024, 1024)
        self.apply(partial(init_fn, std=std))
        self.apply(lambda m: init_fn(m, std))

    def forward(self, x):
        return self.fc(x)
"""


def test_apply_of_a_partial_or_lambda_writes_the_built_model():
    assert _found(APPLY_WRAPPED) == [("ZG101", 10), ("ZG101", 18)]


def test_apply_of_a_partial_of_another_files_initialiser(tmp_path):
    assert _found_in_package(tmp_path, ("inits", INITS), APPLY_IMPORTED) == [("ZG101", 6)]


def test_apply_in_a_modules_construction_is_gathered():
    assert _found(APPLY_IN_CONSTRUCTION, "model.py") == []


# Outside the model classes nothing builds the model: an initialiser or a loader by name is handed it built.
REINIT_BY_NAME = """
from torch import nn

def init_head(model, std=0.02):
    model.head.weight.data.normal_(0, std)

def load_foundations(model, source):
    state = model.state_dict()
    for name, param in source.state_dict().items():
        state[name].copy_(param)

class Policy:
    def __init__(self, model):
        self._model = model

    def _init_learn(self):
        \"\"\"Set up learning; subclasses extend ``_init_learn``.\"\"\"
        self._model.actor_head[-1].mu.weight.data.uniform_(-3e-3, 3e-3)
        for m in list(self._model.critic.modules()) + list(self._model.actor.modules()):
            if isinstance(m, nn.Linear):
                nn.init.orthogonal_(m.weight)

    def reset_head(self):
        self._model.head.bias.data.fill_(0.0)
"""

# ... but a callback handed on (judged where `apply` runs it), a write inside a gather, and an agent's resets and
# loaders of its own bookkeeping write no parameter.
REINIT_LOOKALIKES = """
import deepspeed
from torch import nn

def init_params(m):
    for p in m.parameters():
        nn.init.normal_(p, std=0.02)

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(1024, 1024)
        self.apply(init_params)

    def forward(self, x):
        return self.fc(x)

def init_head(model):
    with deepspeed.zero.GatheredParameters(model.head.weight, modifier_rank=0):
        model.head.weight.data.normal_(0, 0.02)

class Agent:
    def __init__(self, model):
        self.model = model

    def reset_stats(self):
        self.count = 0
        self.returns = []

    def load_config(self, cfg):
        self.cfg = cfg
        self.lr = cfg.lr
"""


def test_initialisers_and_loaders_by_name_write_the_model_they_are_handed():
    assert _found(REINIT_BY_NAME) == [
        ("ZG101", 5), ("ZG101", 10), ("ZG101", 18), ("ZG101", 21), ("ZG101", 24), ("ZG108", 8)
    ]


def test_callbacks_gathered_writes_and_bookkeeping_stay_clean():
    assert _found(REINIT_LOOKALIKES) == []


# A helper of another file that hands its module argument's `apply` a callable writing each module it visits
# writes the module (`effects.APPLIES`): on the built model, from a method run on it or a trainer, the writes are
# lost ...
RESETS = """
import torch
from torch import nn

def reset_all_weights(model: nn.Module) -> None:
    @torch.no_grad()
    def weight_reset(m: nn.Module):
        reset_parameters = getattr(m, "reset_parameters", None)
        if callable(reset_parameters):
            m.reset_parameters()

    model.apply(fn=weight_reset)
"""

RESET_ON_THE_BUILT_MODEL = """
from torch import nn
from .resets import reset_all_weights

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Linear(1024, 1024)
        self.head = nn.Linear(1024, 1024)

    def forward(self, x):
        return self.head(self.backbone(x))

    def reset_weights(self):
        reset_all_weights(self.backbone)

    def refresh(self):
        reset_all_weights(self.head)

class Trainer:
    def __init__(self, model):
        self.model = model

    def next_fold(self):
        reset_all_weights(self.model)
"""

# ... but in a module's construction `apply` runs under `zero.Init`, which gathers each module it visits.
RESET_IN_CONSTRUCTION = """
from torch import nn
from .resets import reset_all_weights

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Linear(1024, 1024)
        reset_all_weights(self.backbone)

    def forward(self, x):
        return self.backbone(x)
"""


def test_a_helper_applying_a_writer_writes_the_built_model(tmp_path):
    found = _found_in_package(tmp_path, ("resets", RESETS), RESET_ON_THE_BUILT_MODEL)
    assert found == [("ZG101", 18), ("ZG101", 25), ("ZG103", 15)]


def test_a_helper_applying_a_writer_in_construction_is_gathered(tmp_path):
    assert _found_in_package(tmp_path, ("resets", RESETS), RESET_IN_CONSTRUCTION) == []
