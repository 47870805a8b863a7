"""A property setter's module arguments are built models, as a constructor's are (`provenance._seed_arguments`,
ZG105): `self.critic = critic` runs the setter, which keeps a deep copy of what it was handed as a target network;
also a `ModuleList` of the critics a setter is handed;
next to setters copying a config and layers they built themselves."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found_in_package

HAZARD = """
import copy
from typing import Sequence

from torch import nn


class Critic(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, 1)

    def forward(self, x):
        return self.fc(x)


class Agent(nn.Module):
    def __init__(self, critic, tau=0.005):
        super().__init__()
        self.critic = critic
        self.tau = tau

    @property
    def critic(self):
        return self._critic

    @critic.setter
    def critic(self, critic: Critic) -> None:
        self._critic = critic
        inner = critic.module if hasattr(critic, "module") else critic
        self._critic_unwrapped = inner
        self._critic_target = copy.deepcopy(self._critic_unwrapped)

    @property
    def critics(self):
        return self._qfs

    @critics.setter
    def critics(self, critics: Sequence[Critic]) -> None:
        self._qfs = nn.ModuleList(critics)
        self._qfs_target = copy.deepcopy(self._qfs)
"""

LOOK_ALIKES = """
import copy

from torch import nn


class Agent(nn.Module):
    def __init__(self, cfg, d):
        super().__init__()
        self.cfg = cfg
        self.d = d

    @property
    def cfg(self):
        return self._cfg

    @cfg.setter
    def cfg(self, cfg: dict) -> None:
        self._cfg = copy.deepcopy(cfg)

    @property
    def d(self):
        return self._d

    @d.setter
    def d(self, d: int) -> None:
        self._head = nn.Linear(d, d)
        self._target = copy.deepcopy(self._head)

    @property
    def heads(self):
        return self._heads

    @heads.setter
    def heads(self, n: int) -> None:
        self._heads = nn.ModuleList([nn.Linear(4, 4) for _ in range(n)])
        self._heads_target = copy.deepcopy(self._heads)
"""


def test_a_setter_copying_the_model_it_is_handed_is_found(tmp_path: Path) -> None:
    assert found_in_package(tmp_path, {"agent.py": HAZARD}, "agent.py", prefix="ZG105") == [("ZG105", 32), ("ZG105", 41)]


def test_setters_copying_a_config_or_a_layer_they_built_stay_clean(tmp_path: Path) -> None:
    assert found_in_package(tmp_path, {"agent.py": LOOK_ALIKES}, "agent.py", prefix="ZG1") == []


COMBINED = """
from typing import Iterable

import torch
from torch import nn


class Regularizer(nn.Module):
    def __init__(self, weight: float = 1.0):
        super().__init__()
        self.register_buffer(name="weight", tensor=torch.as_tensor(weight))

    def forward(self, x):
        return self.weight * x.norm()


class Combined(nn.Module):
    def __init__(self, regularizers: Iterable[Regularizer]):
        super().__init__()
        self.regularizers = nn.ModuleList(regularizers)

    def forward(self, x):
        return sum(r.weight * r(x) for r in self.regularizers)
"""


def test_a_module_list_of_handed_modules_holds_no_parameter_their_classes_register_as_buffers(tmp_path: Path) -> None:
    assert found_in_package(tmp_path, {"reg.py": COMBINED}, "reg.py", prefix="ZG109") == []
