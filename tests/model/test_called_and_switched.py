"""An attribute a class both calls and switches between training and evaluation holds a module.

A player or agent (no `nn.Module`) often holds a model built by something we cannot read (`self.model =
self.network.build(cfg)`). Calling it (`self.model(obs)`) and switching its mode (`self.model.eval()`,
`self.model.train(False)`) is what only a module takes both of: a schedule-free optimizer has modes but is never
called, a transform or a settings callable is called but has no modes. So a loop that calls it and leaves on this
rank's finished episodes, or a random draw that skips it, runs the model on some ranks only (ZG204, ZG202).
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

PLAYER = """
import random
import torch


class Player:
    def __init__(self, network, cfg):
        self.model = network.build(cfg)
        self.model.eval()
        self.eps = cfg["eps"]

    def act(self, obs):
        if random.random() < self.eps:
            return torch.randint(0, 4, (1,))
        return self.model(obs).argmax(-1)

    def play(self, env):
        obs = env.reset()
        while True:
            out = self.model(obs)
            obs, reward, done = env.step(out)
            if done.all():
                break
"""

# Safe: the scheduler-free optimizer switches modes but is never called; the transform is called, never switched.
PLAYER_SAFE = """
import random
import torch


class Player:
    def __init__(self, network, sched_free, cfg):
        self.model = network.build(cfg)
        self.sampler = sched_free(cfg)
        self.sampler.eval()
        self.transform = cfg["transform"]
        self.eps = cfg["eps"]

    def act(self, obs):
        if random.random() < self.eps:
            self.sampler.train()
            return torch.randint(0, 4, (1,))
        return self.transform(obs)

    def play(self, env):
        obs = env.reset()
        while True:
            out = self.transform(obs)
            obs, reward, done = env.step(out)
            if done.all():
                break
"""


def _found(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("player.py", textwrap.dedent(source)) if f.code.startswith("ZG2")]


def test_called_and_switched_attribute_is_a_model():
    assert _found(PLAYER) == [("ZG202", 13), ("ZG204", 22)]


def test_called_or_switched_alone_safe():
    assert _found(PLAYER_SAFE) == []
