"""A method of a plain class that builds the model and hands it back builds it under `zero.Init` like a constructor
call would, also through an alternative constructor (`Policy.from_config(cfg)`) or a class a registry handed back
(`policy.from_config(cfg)` in a method annotated `-> NetPolicy`): initialising a child's weight after that is
ZG103. Moving the built model, or a method that does not say it returns a module, is not."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
import torch
from torch import nn


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(512, 1)


class NetPolicy(nn.Module):
    def __init__(self):
        super().__init__()
        self.critic = Critic()

    @classmethod
    def from_config(cls, config):
        return cls()


class AccessManager:
    def __init__(self, config, registry):
        self._config = config
        self._registry = registry

    def _create_policy(self){returns}:
        {build}
        {after}
        return actor_critic
"""


def zg1(build: str, after: str = "nn.init.orthogonal_(actor_critic.critic.fc.weight)", returns: str = "") -> list:
    source = textwrap.dedent(SOURCE.format(build=build, after=after, returns=returns))
    return [(f.code, f.line) for f in check_source("m.py", source) if f.code.startswith("ZG1")]


def test_a_child_initialised_after_an_alternative_constructor_built_the_model():
    assert zg1("actor_critic = NetPolicy.from_config(self._config)") == [("ZG103", 29)]


def test_a_class_from_a_registry_built_in_a_method_said_to_return_a_module():
    build = "policy = self._registry.get_policy(self._config.name)\n        actor_critic = policy.from_config(self._config)"
    assert zg1(build, returns=" -> NetPolicy") == [("ZG103", 30)]


def test_moving_the_built_model_is_fine():
    assert zg1("actor_critic = NetPolicy.from_config(self._config)", after="actor_critic.to('cpu')") == []


def test_a_registry_class_in_a_method_that_does_not_say_what_it_returns_tells_nothing():
    build = "policy = self._registry.get_policy(self._config.name)\n        actor_critic = policy.from_config(self._config)"
    assert zg1(build) == []
