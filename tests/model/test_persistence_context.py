"""Parameters below the persistence threshold are kept gathered only in forward context.

`zero.Init` partitions small parameters like the rest; DeepSpeed keeps one gathered only once a forward fetched
it (and re-gathers them all after an optimizer step), and inside the engine's forward a read gathers it on the
spot. Outside any forward (a plain class's method, a training function, a model's method the training loop
calls) nothing does: the read sees the placeholder. Each hazard has a look-alike that must stay clean."""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

HEADER = """
import deepspeed
import torch
from torch import nn


class Actor(nn.Module):
    def __init__(self, state_dim, action_dim):
        super().__init__()
        self.net = nn.Linear(state_dim, action_dim)
        self.state_avg = nn.Parameter(torch.zeros(state_dim))
        self.state_std = nn.Parameter(torch.ones(state_dim))

    def forward(self, state):
        return self.get_action(state)  # also part of the forward: no entry point of its own

    def get_action(self, state):
        state = (state - self.state_avg) / self.state_std
        return self.net(state).tanh()
"""

HAZARDS = {
    "a plain class calls a method that normalises with the actor's own vectors": ("ZG303", """
        class Agent:
            def __init__(self, state_dim, action_dim):
                self.actor = Actor(state_dim, action_dim)

            def explore(self, state):
                return self.actor.get_action(state)
        """),
    "a training function calls it on a model handed in": ("ZG303", """
        def evaluate(actor: Actor, states):
            return [actor.get_action(s) for s in states]
        """),
    "a model's sampler calls it on a child": ("ZG303", """
        class Model(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.actor = Actor(d, d)

            def forward(self, x):
                return self.actor(x)

            @torch.no_grad()
            def act(self, x):
                return self.actor.get_action(x)
        """),
    "a model's sampler reads a norm's weight": ("ZG109", """
        class Model(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.net = nn.Linear(d, d)
                self.norm = nn.LayerNorm(d)

            def forward(self, x):
                return self.norm(self.net(x))

            @torch.no_grad()
            def sample(self, x):
                return self.net(x) * self.norm.weight
        """),
    "a model's sampler adds its own 1-D embedding": ("ZG109", """
        class Diffusion(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.net = nn.Linear(d, d)
                self.null_emb = nn.Parameter(torch.randn(d))

            def forward(self, x, cond):
                return self.net(x + cond)

            @torch.no_grad()
            def sample(self, x):
                return self.net(x + self.null_emb)
        """),
    "a temperature module with no forward read through its property": ("ZG109", """
        class Temperature(nn.Module):
            def __init__(self, value):
                super().__init__()
                self.log_alpha = nn.Parameter(torch.tensor(value))

            @property
            def alpha(self):
                return self.log_alpha.detach().exp().item()
        """),
}

SAFE = {
    "the same call in a module's forward": """
        class Policy(nn.Module):
            def __init__(self, state_dim, action_dim):
                super().__init__()
                self.actor = Actor(state_dim, action_dim)

            def forward(self, state):
                return self.actor.get_action(state)
        """,
    "the same read in the model's forward": """
        class Model(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.net = nn.Linear(d, d)
                self.norm = nn.LayerNorm(d)

            def forward(self, x):
                return self.net(x) * self.norm.weight

            def normed(self, x):
                return self.norm(x)  # (the norm runs here: its hook has gathered its small weight once)
        """,
    "the call inside GatheredParameters": """
        class Agent:
            def __init__(self, state_dim, action_dim):
                self.actor = Actor(state_dim, action_dim)

            def explore(self, state):
                with deepspeed.zero.GatheredParameters(list(self.actor.parameters())):
                    return self.actor.get_action(state)
        """,
    "only the dtype and device of a small parameter": """
        class Agent:
            def __init__(self, state_dim, action_dim):
                self.actor = Actor(state_dim, action_dim)

            def explore(self, state):
                return self.actor(state.to(self.actor.state_avg.device, self.actor.state_avg.dtype))
        """,
    "only the dtype of the sampler's own embedding": """
        class Diffusion(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.net = nn.Linear(d, d)
                self.null_emb = nn.Parameter(torch.randn(d))

            def forward(self, x, cond):
                return self.net(x + cond)

            @torch.no_grad()
            def sample(self, x):
                return self.net(x.to(self.null_emb.dtype))
        """,
    # Created only under a test: whether it exists is the configuration's (not settled by the file).
    "an optional small parameter read by a sampler's call": """
        class Unet(nn.Module):
            def __init__(self, d, cond_dim=None):
                super().__init__()
                self.net = nn.Linear(d, d)
                self.null_cond = nn.Parameter(torch.randn(1, d)) if cond_dim is not None else None

            def forward(self, x, cond=None, drop=0.0):
                if self.null_cond is not None and drop > 0:
                    cond = self.null_cond.expand_as(x)
                return self.net(x if cond is None else x + cond)

            def guided(self, x):
                return self.net(x + self.null_cond.expand_as(x))


        class Sampler:
            def __init__(self, d):
                self.unet = Unet(d, cond_dim=d)

            def sample(self, x):
                return self.unet.guided(x)
        """,
}


def _codes(body: str) -> list[str]:
    return [f.code for f in check_source("m.py", HEADER + textwrap.dedent(body)) if f.code[:3] in ("ZG1", "ZG3")]


@pytest.mark.parametrize("name", sorted(HAZARDS))
def test_small_parameter_read_outside_forward_is_flagged(name):
    code, body = HAZARDS[name]
    assert code in _codes(body)


@pytest.mark.parametrize("name", sorted(SAFE))
def test_small_parameter_look_alike_stays_clean(name):
    assert _codes(SAFE[name]) == []
