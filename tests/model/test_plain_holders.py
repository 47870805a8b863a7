"""Models an RL algorithm, agent or trainer (no module) keeps through a plain object of the program (h-rl): the
modules a plain object's constructor builds (`self.policy = Policy(d)` setting `self.q = Critic(d)`, also when a
function of the file returns the object), the items of a list or dict of built modules handed to a helper
(`soft_update(self.qs_t[i], self.qs[i], tau)`, a `zip` over two such lists), and the object itself deep-copied or
pickled (`copy.deepcopy(self)` in an agent whose constructor built its networks); each beside a look-alike."""

from __future__ import annotations

from package_check import found_in_package

NETS = """
import torch
from torch import nn


class Critic(nn.Module):
    def __init__(self, d, h=512):
        super().__init__()
        self.l1 = nn.Linear(d, h)
        self.out = nn.Linear(h, 1)

    def forward(self, x):
        return self.out(torch.relu(self.l1(x)))
"""

UTILS = """
def soft_update(target, source, tau):
    for t, s in zip(target.parameters(), source.parameters()):
        t.data.mul_(1.0 - tau).add_(tau * s.data)


def hard_update(target, source):
    target.load_state_dict(source.state_dict())
"""

HOLDER = """
import deepspeed
import torch

from .nets import Critic
from .utils import hard_update


class Policy:
    def __init__(self, d):
        self.q = Critic(d)
        self.q_target = Critic(d)
        self.tau = 0.005


class Algo:
    def __init__(self, d):
        self.policy = Policy(d)

    def sync(self):
{body}
"""


def _algo(tmp_path, body: str, text: str = HOLDER) -> list[tuple[str, int]]:
    body = "\n".join("        " + line for line in body.strip().splitlines())
    files = {"nets.py": NETS, "utils.py": UTILS, "algo.py": text.replace("{body}", body)}
    return found_in_package(tmp_path, files, "algo.py", prefix="ZG1")


def test_a_model_a_plain_holder_builds_loaded_from_another_is_read_partitioned(tmp_path) -> None:
    assert ("ZG108", 21) in _algo(tmp_path, "self.policy.q_target.load_state_dict(self.policy.q.state_dict())")


def test_a_model_a_plain_holder_builds_handed_to_a_helper_of_another_file(tmp_path) -> None:
    assert ("ZG108", 21) in _algo(tmp_path, "hard_update(self.policy.q_target, self.policy.q)")


def test_the_same_load_inside_a_gather_is_clean(tmp_path) -> None:
    body = """
params = list(self.policy.q.parameters()) + list(self.policy.q_target.parameters())
with deepspeed.zero.GatheredParameters(params, modifier_rank=0):
    hard_update(self.policy.q_target, self.policy.q)
"""
    assert _algo(tmp_path, body) == []


OPTIMISERS = """
import torch

from .nets import Critic


class Opts:
    def __init__(self, critic):
        self.opt = torch.optim.Adam(critic.parameters())
        self.lr = 3e-4


class Algo:
    def __init__(self, d):
        self.critic = Critic(d)
        self.opts = Opts(self.critic)

    def sync(self):
{body}
"""


def test_state_of_what_a_plain_holder_builds_that_is_no_model_is_clean(tmp_path) -> None:
    # an optimizer a plain object builds is no module: its state dict holds no partitioned parameter
    assert _algo(tmp_path, "torch.save(self.opts.opt.state_dict(), 'opt.pt')", OPTIMISERS) == []


FACTORY = """
import copy

import torch

from .nets import Critic


class Agent:
    def __init__(self, d):
        self.q = Critic(d)
        self.q_tgt = Critic(d)


class Settings:
    def __init__(self, d):
        self.d = d


def make_agent(d):
    return Agent(d)


def make_settings(d):
    return Settings(d)


class Algo:
    def __init__(self, d):
        self.agent = make_agent(d)
        self.settings = make_settings(d)

    def sync(self):
{body}
"""


def test_a_plain_holder_a_function_of_the_file_returns_holds_its_built_models(tmp_path) -> None:
    assert ("ZG108", 34) in _algo(tmp_path, "self.agent.q_tgt.load_state_dict(self.agent.q.state_dict())", FACTORY)


def test_a_settings_object_a_function_returns_copied_is_clean(tmp_path) -> None:
    assert _algo(tmp_path, "return copy.deepcopy(self.settings)", FACTORY) == []


LISTS = """
import copy

import deepspeed

from .nets import Critic
from .utils import soft_update


class Buffer:
    def __init__(self, n):
        self.data = [None] * n


class Algo:
    def __init__(self, d, n=2):
        self.qs = [Critic(d) for _ in range(n)]
        self.qs_t = [Critic(d) for _ in range(n)]
        self.bufs = [Buffer(100) for _ in range(n)]

    def sync(self):
{body}
"""


def test_an_item_of_a_list_of_built_models_handed_to_a_helper(tmp_path) -> None:
    assert ("ZG101", 23) in _algo(tmp_path, "for i in range(2):\n    soft_update(self.qs_t[i], self.qs[i], 0.1)", LISTS)


def test_items_of_two_lists_of_built_models_zipped_into_a_helper(tmp_path) -> None:
    assert ("ZG101", 23) in _algo(tmp_path, "for q, qt in zip(self.qs, self.qs_t):\n    soft_update(qt, q, 0.1)", LISTS)


def test_items_of_a_list_of_plain_objects_copied_and_models_synced_in_a_gather_are_clean(tmp_path) -> None:
    body = """
snapshot = copy.deepcopy(self.bufs[0])
for q, qt in zip(self.qs, self.qs_t):
    with deepspeed.zero.GatheredParameters(list(q.parameters()) + list(qt.parameters()), modifier_rank=0):
        soft_update(qt, q, 0.1)
return snapshot
"""
    assert _algo(tmp_path, body, LISTS) == []


AGENT = """
import copy

import torch
from torch import nn

from .nets import Critic


class Agent:
    def __init__(self, d):
        self.q = Critic(d)

    def sync(self):
{body}


class Schedule:
    def __init__(self, start, end):
        self.start, self.end = start, end
        self.act = nn.ReLU()

    def frozen(self):
        torch.save(self, "schedule.pt")
        return copy.deepcopy(self)
"""


def test_an_agent_building_its_network_copied_whole(tmp_path) -> None:
    assert ("ZG105", 15) in _algo(tmp_path, "return copy.deepcopy(self)", AGENT)


def test_an_agent_building_its_network_pickled_whole(tmp_path) -> None:
    assert ("ZG108", 15) in _algo(tmp_path, "torch.save(self, 'agent.pt')", AGENT)


def test_a_plain_object_keeping_no_model_copied_and_pickled_whole_is_clean(tmp_path) -> None:
    # (`Agent.sync` does nothing here; `Schedule` keeps settings and a layer with no parameter)
    assert _algo(tmp_path, "return None", AGENT) == []
