"""Target-network updates, weight averages and parameter counts through helpers, and zips of a library's own.

* A function of the program pairing parameters with a zip of its own (`for p, t in zip_strict(params, targets)`) or
  `itertools.zip_longest` reads and writes them as `zip` would: `polyak_update(net.parameters(), target.parameters(),
  tau)` writes the target's parameters outside any gather (ZG101).
* A helper of a library the program cannot read, named for updating a target network (`soft_update(target, source,
  tau)`, `hard_update(target, source)`, `polyak_update(params, target_params, tau)`), writes the target; one named for
  counting parameters (`count_params(model)`) reads their sizes (ZG102).
* A class of such a library named as a weight average (`EMA(model)`, `ExponentialMovingAverage(params)`) copies the
  model it is given (ZG105), and its `update()` blends in every parameter of that model.
Handed values that are no model (statistics, a config) are left alone.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source


def _found(source: str, prefix: str = "ZG") -> list[tuple[str, int]]:
    found = check_source("agent.py", textwrap.dedent(source))
    return sorted({(f.code, f.line) for f in found if f.code.startswith(prefix)})


OWN_ZIP = """
from itertools import zip_longest

import torch


def zip_strict(*iterables):
    sentinel = object()
    for combo in zip_longest(*iterables, fillvalue=sentinel):
        if sentinel in combo:
            raise ValueError("lengths differ")
        yield combo


def polyak_update(params, target_params, tau):
    with torch.no_grad():
        for param, target_param in zip_strict(params, target_params):
            target_param.data.mul_(1 - tau)
            torch.add(target_param.data, param.data, alpha=tau, out=target_param.data)


class DQN:
    def __init__(self, policy, tau):
        self.q_net = policy.q_net
        self.q_net_target = policy.q_net_target
        self.tau = tau

    def on_step(self):
        polyak_update(self.q_net.parameters(), self.q_net_target.parameters(), self.tau)
"""


def test_an_update_pairing_parameters_with_a_zip_of_its_own_writes_the_target():
    assert ("ZG101", 29) in _found(OWN_ZIP, "ZG1")


LIBRARY = """
import torch
from somelib.rl.utils import polyak_update, soft_update, hard_update, count_params
from somelib.ema import EMA


class Agent:
    def __init__(self, policy, critic, critic_target, stats):
        self.policy = policy
        self.critic = critic
        self.critic_target = critic_target
        self.stats = stats
        self.target_stats = dict(stats)
        self.ema = EMA(self.policy, beta=0.99)

    def step(self, tau):
        soft_update(self.critic_target, self.critic, tau)
        hard_update(self.critic_target, self.critic)
        polyak_update(self.critic.parameters(), self.critic_target.parameters(), tau)
        self.ema.update()
        soft_update(self.target_stats, self.stats, tau)
        return count_params(self.policy)
"""


def test_library_helpers_named_for_target_updates_averages_and_counts():
    found = _found(LIBRARY, "ZG1")
    assert {("ZG105", 14), ("ZG101", 17), ("ZG101", 18), ("ZG101", 19), ("ZG101", 20), ("ZG102", 22)} <= set(found)
    assert not [line for _code, line in found if line == 21]  # statistics, no model


FACTORY_BUILT = """
import torch
from somelib.models import build_model, build_tokenizer


class Runner:
    def __init__(self, cfg):
        self.network = build_model(cfg)
        self.tokenizer = build_tokenizer(cfg)

    def export(self, path):
        torch.save(self.network.state_dict(), path)
        torch.save(self.tokenizer.state_dict(), path + ".tok")
"""


def test_a_plain_class_holds_the_model_a_library_factory_builds():
    """`self.network = build_model(cfg)` in a runner: the model it trains, whose state dict holds placeholders; what
    another factory builds (a tokenizer) is no model."""
    assert _found(FACTORY_BUILT, "ZG1") == [("ZG108", 12)]
