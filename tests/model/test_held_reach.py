"""What an object that is not a module reaches of the models it holds, beyond `self.X`.

An RL agent or trainer often holds a model it cannot name the class of (`self.model = network.build(cfg)`) and
uses submodules of it by path (`self.model.nets.critic.parameters()` for an optimizer), or keeps one model per
agent in a dict (`policy = self.policies[uid]`). A path on which the class calls a method only a module has is
a submodule of what the object holds; a local bound to an element of a container on `self` and used as a module
is a held model. Both are partitioned when the training loop runs, so clipping their gradients, reading or
loading their state dicts is a ZG1 hazard. Paths never used as modules (a normaliser with buffers only, settings)
and containers of other things (schedulers) stay quiet.
"""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

HEAD = """
import torch
from torch import nn
"""

AGENT = """
class Agent:
    def __init__(self, network, cfg):
        self.model = network.build(cfg)
        self.critic_opt = torch.optim.Adam(self.model.nets.critic.parameters(), lr=1e-3)
        self.cfg = cfg

    def step(self, loss):
{body}
"""

MULTI = """
class MultiAgent:
    def __init__(self, models, agents, schedulers):
        self.agents = agents
        self.policies = {{uid: models[uid]["policy"] for uid in agents}}
        self.schedulers = schedulers

    def step(self, losses):
        for uid in self.agents:
{body}
"""


def codes(source: str) -> list[str]:
    """The ZG1 codes zgen reports for a file made of `HEAD` and `source`."""
    return sorted(f.code for f in check_source("m.py", HEAD + textwrap.dedent(source)) if f.code.startswith("ZG1"))


HAZARDS = {
    "clips-a-submodule-reached-by-path": ("ZG107", AGENT.format(body="""
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.nets.critic.parameters(), 1.0)
""")),
    "saves-a-submodule-reached-by-path": ("ZG108", AGENT.format(body="""
        torch.save(self.model.nets.critic.state_dict(), "critic.pt")
""")),
    "loads-into-a-submodule-reached-by-path": ("ZG108", AGENT.format(body="""
        self.model.nets.critic.load_state_dict(torch.load("critic.pt"))
""")),
    "clips-a-model-taken-from-a-dict-on-self": ("ZG107", MULTI.format(body="""
            policy = self.policies[uid]
            losses[uid].backward()
            nn.utils.clip_grad_norm_(policy.parameters(), 0.5)
""")),
    "saves-a-model-taken-with-get": ("ZG108", MULTI.format(body="""
            policy = self.policies.get(uid)
            torch.save(policy.state_dict(), uid + ".pt")
            print(sum(p.numel() for p in policy.parameters()))
""")),
}

LOOK_ALIKES = {
    "state-of-a-path-never-used-as-a-module": AGENT.format(body="""
        torch.save(self.model.normaliser.state_dict(), "norm.pt")
"""),
    "a-settings-path": AGENT.format(body="""
        torch.save(self.cfg.model.state_dict(), "cfg.pt")
        print(list(self.cfg.model.parameters()))
"""),
    "requires-grad-on-a-submodule-by-path": AGENT.format(body="""
        for p in self.model.nets.critic.parameters():
            p.requires_grad = False
"""),
    "state-of-a-scheduler-from-a-dict": MULTI.format(body="""
            scheduler = self.schedulers[uid]
            torch.save(scheduler.state_dict(), uid + ".pt")
"""),
    "dict-element-only-handed-to-an-optimizer": MULTI.format(body="""
            policy = self.policies[uid]
            opt = torch.optim.Adam(policy.parameters())
            opt.step()
"""),
}


@pytest.mark.parametrize("case", sorted(HAZARDS))
def test_hazard_is_found(case):
    code, source = HAZARDS[case]
    assert code in codes(source)


@pytest.mark.parametrize("case", sorted(LOOK_ALIKES))
def test_look_alike_is_clean(case):
    assert codes(LOOK_ALIKES[case]) == []
