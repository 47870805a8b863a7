"""An abstract step of a plain base class runs what the subclasses of other files of the package fill in.

A runner, player or trainer base (no `nn.Module`) loops over `self.act(obs)` and stops on what the environment
returned to this rank (a NaN reward, its own finished episodes), while `act` only raises `NotImplementedError` or
is an `@abstractmethod` there: the subclasses that fill it in live in other files of the package that the base's
file never imports (`algos/players.py`), and they run the model, maybe through a helper of their own. The rank
that leaves the loop stops calling the model its peers still call (ZG204 at the exit). A subclass whose override
runs no model, and a class of the package that defines a method of that name without deriving from the base,
leave the loop quiet.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

BASE = """
import abc
import torch


class Runner(abc.ABC):
    def __init__(self, env):
        self.env = env

    @abc.abstractmethod
    def act(self, obs):
        \"\"\"Pick an action.\"\"\"

    def run(self):
        obs = self.env.reset()
        while True:
            action = self.act(obs)
            obs, reward, done = self.env.step(action)
            if torch.isnan(reward).any():
                break
"""

# `raise NotImplementedError` in the base; the loop stops on this rank's own finished games.
BASE_RAISING = """
class BasePlayer:
    def __init__(self, env):
        self.env = env

    def get_action(self, obs):
        raise NotImplementedError("get_action")

    def run(self, n_games):
        played = 0
        obs = self.env.reset()
        for _ in range(1000):
            action = self.get_action(obs)
            obs, reward, done = self.env.step(action)
            played += len(done.nonzero())
            if played >= n_games:
                break
"""

NET = """
from torch import nn


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(256, 256)

    def forward(self, x):
        return self.fc(x)
"""

# The override runs the policy through a helper of its own (two hops from the base's call).
AGENTS = """
from ..nets import Policy
from ..base import Runner


class Agent(Runner):
    def __init__(self, env):
        super().__init__(env)
        self.policy = Policy()

    def _infer(self, obs):
        return self.policy(obs)

    def act(self, obs):
        return self._infer(obs)
"""

PLAYERS = """
from ..nets import Policy
from ..base import BasePlayer


class Player(BasePlayer):
    def __init__(self, env):
        super().__init__(env)
        self.policy = Policy()

    def get_action(self, obs):
        return self.policy(obs)
"""

# Safe: the override samples the action space; a class of its own defines `act` and runs a model.
AGENTS_SAFE = """
from ..nets import Policy
from ..base import Runner


class Agent(Runner):
    def act(self, obs):
        return self.env.action_space.sample()


class Scripted:
    def __init__(self):
        self.policy = Policy()

    def act(self, obs):
        return self.policy(obs)
"""


def _exits(tmp_path, base: str, agents: str) -> list[int]:
    """The lines of ZG204 findings in `pkg/base.py`, the subclasses in `pkg/algos/agents.py` (not imported)."""
    pkg = tmp_path / "pkg"
    (pkg / "algos").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "algos" / "__init__.py").write_text("")
    (pkg / "nets.py").write_text(textwrap.dedent(NET))
    (pkg / "algos" / "agents.py").write_text(textwrap.dedent(agents))
    module = pkg / "base.py"
    module.write_text(textwrap.dedent(base))
    return [f.line for f in check_source(str(module), module.read_text()) if f.code == "ZG204"]


def test_abstract_step_filled_in_another_file_runs_the_model(tmp_path):
    assert _exits(tmp_path, BASE, AGENTS) == [19]


def test_raising_step_filled_in_another_file_runs_the_model(tmp_path):
    assert _exits(tmp_path, BASE_RAISING, PLAYERS) == [16]


def test_override_running_no_model_and_unrelated_definer_safe(tmp_path):
    assert _exits(tmp_path, BASE, AGENTS_SAFE) == []
