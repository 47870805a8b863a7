"""A model a factory function of the program hands back (`agent, player = build_agent(cfg)`, `net, tgt =
build(d)`, of this file or another) was built there (under `zero.Init`, partitioned once its constructor returned):
at the caller it is a built model, as if handed in (`provenance.factory_made`; a function binding one is read from
`handed._provenance_entries`). Its state dict saved, its parameters' `.data` mixed into a target or pointed at by a
player are ZG108/ZG109/ZG101. Look-alikes: an optimizer and a schedule a factory returns, a plain replay buffer,
numpy arrays, configs."""

from __future__ import annotations

from tests.model.package_check import found_in_package

AGENTS = """
    import copy
    import torch
    from torch import nn


    class Actor(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.fc = nn.Linear(d, 1024)

        def forward(self, x):
            return self.fc(x)


    class Buffer:
        def __init__(self, n):
            self.items = []

        def state_dict(self):
            return {"items": self.items}


    def build_agent(d):
        agent = Actor(d)
        player = Actor(d)
        return agent, player


    def build_optim(params):
        opt = torch.optim.Adam(params)
        return opt, torch.optim.lr_scheduler.StepLR(opt, 10)


    def build_buffer(n):
        return Buffer(n), {"n": n}


    def to_like(x, y):
        return copy.deepcopy(x).to(y.dtype)
"""

TRAIN = """
    import torch
    from .agents import build_agent


    def main(cfg):
        agent, player = build_agent(cfg.d)
        for agent_p, player_p in zip(agent.parameters(), player.parameters()):
            player_p.data = agent_p.data
        torch.save({"agent": agent.state_dict()}, cfg.path)
"""

SAFE = """
    import copy
    import numpy as np
    import torch
    from .agents import build_optim, build_buffer, to_like


    def make_arrays(n):
        return np.zeros(n), np.ones(n)


    def nstep(rew, q, n):
        q = q.reshape(n, -1)
        out = q * 0.9 + rew
        return out.reshape((n, 1))


    def main(cfg, params):
        ret = nstep(cfg.rew, cfg.q, 2)
        out = to_like(ret, cfg.q)
        opt, sched = build_optim(params)
        rb, meta = build_buffer(cfg.n)
        a, b = make_arrays(cfg.n)
        a[:] = b
        torch.save({"opt": opt.state_dict(), "sched": sched.state_dict(), "rb": rb.state_dict(), "meta": meta}, cfg.path)
"""


def test_models_a_factory_hands_back_are_built(tmp_path):
    found = found_in_package(tmp_path, {"agents.py": AGENTS, "train.py": TRAIN}, "train.py", prefix="ZG1")
    assert ("ZG101", 9) in found  # `player_p.data = ...`: the player's partitioned parameter rebound
    assert ("ZG109", 9) in found  # `agent_p.data`: a placeholder read
    assert ("ZG108", 10) in found  # `agent.state_dict()` saved


def test_optimizers_buffers_and_arrays_a_factory_hands_back_stay_clean(tmp_path):
    assert found_in_package(tmp_path, {"agents.py": AGENTS, "safe.py": SAFE}, "safe.py", prefix="ZG1") == []


UTILS = """
    from lightning.fabric import Fabric


    def passthrough(module):
        object.__setattr__(module, "flag", True)
        return module


    def prepare(fabric: Fabric, module):
        module = passthrough(fabric.setup_module(module))
        return module


    def to_device(batch, device):
        batch = batch.to(device)
        return batch
"""

WRAPPED = """
    import copy
    import torch
    from torch import nn
    from .utils import prepare, to_device


    class Net(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.fc = nn.Linear(d, 4096)

        def forward(self, x):
            return self.fc(x)


    def build_agent(fabric, d):
        actor = Net(d)
        critic = Net(d)
        actor = prepare(fabric, actor)
        critic = prepare(fabric, critic)
        target = copy.deepcopy(critic.module)
        target = prepare(fabric, target)
        return actor, critic, target


    def make_data(d):
        x = torch.zeros(d)
        x = to_device(x, "cuda")
        return x, x
"""

WRAPPED_TRAIN = """
    import torch
    from .agent import build_agent, make_data


    def main(fabric, cfg):
        actor, critic, target = build_agent(fabric, cfg.d)
        for cp, tp in zip(critic.module.parameters(), target.parameters()):
            tp.data.copy_(0.1 * cp.data + 0.9 * tp.data)
        torch.save({"actor": actor.state_dict()}, cfg.path)
        a, b = make_data(cfg.d)
        b.data.copy_(a)
"""


def test_a_module_argument_rebound_through_wrappers_is_handed_back(tmp_path):
    # `module = passthrough(fabric.setup_module(module)); return module`: the caller's module, wrapped
    # (`members._passed_through`), so `build_agent` hands back its `Net`s
    files = {"utils.py": UTILS, "agent.py": WRAPPED, "train.py": WRAPPED_TRAIN}
    found = found_in_package(tmp_path, files, "train.py", prefix="ZG1")
    assert ("ZG108", 10) in found  # `actor.state_dict()`
    assert ("ZG101", 9) in found  # the target's parameters written from the critic's
    assert not any(line == 12 for _code, line in found)  # tensors rebound through `to_device`
