"""Ranks that run a model a different number of times, outside the model too: code of any class that holds a
model (an RL agent, a sampler, a collector; `nn.Module` or not) gated by a random draw or by this rank's data,
modules picked by the keys of an input mapping, and what runs submodules seen further: a local closure that calls a
model, a method's parameter that its class's callers bind to a submodule, a child's method that runs the child's
layers, a `Sequential` of several layers, a presence helper in a test combined with the configuration. Each hazard
has a safe look-alike that must stay clean."""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

HEADER = """
import random
import numpy as np
import torch
from torch import nn


def exists(v):
    return v is not None
"""

HAZARDS = {
    "epsilon-greedy skips the policy": ("ZG202", """
        class Agent:
            def __init__(self, policy: nn.Module, eps):
                self.policy = policy
                self.eps = eps

            def act(self, obs):
                if np.random.rand() < self.eps:
                    return np.random.randint(4)
                return self.policy(obs).argmax()
        """),
    "guidance dropout runs an extra forward": ("ZG202", """
        class Sampler:
            def __init__(self, unet: nn.Module, p):
                self.unet = unet
                self.p = p

            def loss(self, x, cond):
                out = self.unet.forward(x, cond)
                if torch.rand(()) < self.p:
                    out = out + self.unet.forward(x, None)
                return out
        """),
    "an episode count ends the collection loop": ("ZG204", """
        class Collector:
            def __init__(self, policy: nn.Module, env):
                self.policy = policy
                self.env = env

            def collect(self, n_episode):
                episodes = 0
                obs = self.env.reset()
                while True:
                    obs, rew, done = self.env.step(self.policy(obs))
                    if done:
                        episodes += 1
                    if episodes >= n_episode:
                        break
                return episodes
        """),
    "towers picked by the keys of the input": ("ZG203", """
        class Towers(nn.Module):
            def __init__(self, dims):
                super().__init__()
                self.proj = nn.ModuleDict({k: nn.Linear(d, 4096) for k, d in dims.items()})

            def forward(self, feats):
                return {key: self.proj[key](value) for key, value in feats.items()}
        """),
    "towers picked by walking the input mapping itself": ("ZG203", """
        class Towers(nn.Module):
            def __init__(self, dims):
                super().__init__()
                self.proj = nn.ModuleDict({k: nn.Linear(d, 4096) for k, d in dims.items()})

            def forward(self, feats):
                out = 0
                for key in feats:
                    out = out + self.proj[key](feats[key])
                return out
        """),
    "a head picked by a field of the batch, directly and through a local": ("ZG203", """
        class MultiTask(nn.Module):
            def __init__(self, tasks):
                super().__init__()
                self.heads = nn.ModuleDict({t: nn.Linear(64, 4096) for t in tasks})
                self.embed = nn.ModuleDict({t: nn.Linear(64, 64) for t in tasks})

            def forward(self, batch):
                task = batch["task"]
                h = self.embed[task](batch["x"])
                return self.heads[batch["task"]](h)
        """),
    "a key missing from the input skips a module a method returns": ("ZG203", """
        class Hetero(nn.Module):
            def __init__(self, dims):
                super().__init__()
                self.mods = nn.ModuleDict({k: nn.Linear(d, 4096) for k, d in dims.items()})

            def _get_module(self, key):
                return self.mods[key]

            def forward(self, inputs):
                out = {}
                for key in self.mods:
                    if key not in inputs:
                        continue
                    out[key] = self._get_module(key)(inputs[key])
                return out
        """),
    "an agent's policy skipped when this rank's batch has none of its samples": ("ZG203", """
        class MultiAgent(nn.Module):
            def __init__(self, policies: dict[str, nn.Module]):
                super().__init__()
                self.policies = policies

            def forward(self, batch):
                results = []
                for agent_id, policy in self.policies.items():
                    index = np.nonzero(batch.agent_id == agent_id)[0]
                    if len(index) == 0:
                        continue
                    results.append(policy(batch[index]))
                return results
        """),
    "a trainer's epoch stops on a flag its training step returned": ("ZG204", """
        from typing import TypeVar


        class Algorithm(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.net = nn.Linear(d, d)


        TAlgorithm = TypeVar("TAlgorithm", bound=Algorithm)


        class Trainer:
            def __init__(self, algorithm: TAlgorithm, steps):
                self.algorithm = algorithm
                self.steps = steps
                self.stop = False

            def _training_step(self, batch):
                raise NotImplementedError

            def epoch(self, batches):
                done = 0
                while done < self.steps and not self.stop:
                    result = self._training_step(next(batches))
                    done += 1
                    self.stop = result.is_done()
                return done


        class OnPolicyTrainer(Trainer):
            def _training_step(self, batch):
                return self.algorithm.update(batch)
        """),
    "a line search leaves through the else of a chain of tests on a closure's output": ("ZG204", """
        class LineSearch:
            def __init__(self, policy: nn.Module, n):
                self.policy = policy
                self.n = n

            def search(self, states, old):
                def evaluate():
                    return self.policy(states)
                step = 1.0
                for i in range(self.n):
                    gain = (evaluate() - old).mean()
                    if not torch.isfinite(gain):
                        pass
                    elif gain < 0:
                        pass
                    else:
                        break
                    step *= 0.5
                return step
        """),
    "a random extra forward of a submodule handed to a helper method": ("ZG202", """
        class Unet(nn.Module):
            def __init__(self):
                super().__init__()
                self.net = nn.Linear(4, 4)
                self.self_cond = True

            def forward(self, x, cond=None):
                return self.net(x)


        class Decoder(nn.Module):
            def __init__(self, unets):
                super().__init__()
                self.unets = nn.ModuleList(unets)

            def get_unet(self, n):
                return self.unets[n - 1]

            def p_losses(self, unet, x):
                cond = None
                if unet.self_cond and random.random() < 0.5:
                    with torch.no_grad():
                        cond = unet(x).detach()
                return unet(x, cond)

            def forward(self, x, unet_number=1):
                unet = self.get_unet(unet_number)
                return self.p_losses(unet, x)
        """),
    "an optional input tested through exists() gates a Sequential of layers": ("ZG205", """
        class Unet(nn.Module):
            def __init__(self, d, lowres=False):
                super().__init__()
                self.body = nn.Linear(d, d)
                self.to_lowres = nn.Sequential(nn.Linear(1, d), nn.SiLU(), nn.Linear(d, d)) if lowres else None

            def forward(self, x, lowres_noise_level=None):
                t = self.body(x)
                if exists(lowres_noise_level):
                    assert exists(self.to_lowres), "build the model with lowres=True"
                    t = t + self.to_lowres(lowres_noise_level)
                return t
        """),
    "a child's method runs its encoder unless the caller passed the embedding": ("ZG205", """
        class Clip(nn.Module):
            def __init__(self):
                super().__init__()
                self.enc = nn.Linear(4, 4)

            def embed_image(self, x):
                return self.enc(x), None


        class Decoder(nn.Module):
            def __init__(self, unconditional=False):
                super().__init__()
                self.clip = Clip()
                self.net = nn.Linear(4, 4)
                self.unconditional = unconditional

            def forward(self, image, image_embed=None):
                if not exists(image_embed) and not self.unconditional:
                    image_embed, _ = self.clip.embed_image(image)
                return self.net(image_embed)
        """),
}

SAFE = {
    "every agent's policy runs, on an empty batch too": """
        class MultiAgent(nn.Module):
            def __init__(self, policies: dict[str, nn.Module]):
                super().__init__()
                self.policies = policies

            def forward(self, batch):
                results = []
                for agent_id, policy in self.policies.items():
                    index = np.nonzero(batch.agent_id == agent_id)[0]
                    results.append(policy(batch[index]))
                return results
        """,
    "a random perturbation of the policy's output": """
        class Agent:
            def __init__(self, policy: nn.Module, eps):
                self.policy = policy
                self.eps = eps

            def act(self, obs):
                q = self.policy(obs)
                return (q + torch.rand_like(q) * self.eps).argmax()
        """,
    "guidance dropout as a mask, one forward": """
        class Sampler:
            def __init__(self, unet: nn.Module, p):
                self.unet = unet
                self.p = p

            def loss(self, x, cond, null):
                drop = torch.rand(x.shape[0]) < self.p
                return self.unet.forward(x, torch.where(drop[:, None], null, cond))
        """,
    "a fixed number of steps, episodes reset inside": """
        class Collector:
            def __init__(self, policy: nn.Module, env):
                self.policy = policy
                self.env = env

            def collect(self, n_step):
                obs = self.env.reset()
                for _ in range(n_step):
                    obs, rew, done = self.env.step(self.policy(obs))
                    if done:
                        obs = self.env.reset()
                return obs
        """,
    "a random draw in a class that holds no model": """
        class Explorer:
            def __init__(self, eps, actions):
                self.eps = eps
                self.actions = actions

            def act(self, q):
                if np.random.rand() < self.eps:
                    return np.random.randint(self.actions)
                return q.argmax()
        """,
    "towers walked by the model's own keys": """
        class Towers(nn.Module):
            def __init__(self, dims):
                super().__init__()
                self.proj = nn.ModuleDict({k: nn.Linear(d, 4096) for k, d in dims.items()})

            def forward(self, feats):
                return {key: layer(feats[key]) for key, layer in self.proj.items()}
        """,
    "towers walked by a list of names, reading the input by each": """
        class Towers(nn.Module):
            def __init__(self, names):
                super().__init__()
                self.proj = nn.ModuleDict({k: nn.Linear(64, 4096) for k in names})

            def forward(self, feats, names):
                out = 0
                for key in names:
                    out = out + self.proj[key](feats[key])
                return out
        """,
    "a head picked by the configuration, by an argument, by a loop over the layers": """
        class MultiTask(nn.Module):
            def __init__(self, tasks, task):
                super().__init__()
                self.heads = nn.ModuleDict({t: nn.Linear(64, 4096) for t in tasks})
                self.layers = nn.ModuleList([nn.Linear(64, 64) for _ in range(4)])
                self.task = task

            def forward(self, batch, task="cls"):
                h = batch["x"]
                for i in range(len(self.layers)):
                    h = self.layers[i](h)
                return self.heads[self.task](h) + self.heads[task](h)
        """,
    "a list of layer indices to return, not keys of the input": """
        class Layers(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([nn.Linear(4096, 4096) for _ in range(4)])

            def forward(self, x, keep=()):
                found = []
                for i, layer in enumerate(self.layers):
                    x = layer(x)
                    if i in keep:
                        found.append(x)
                        if i == max(keep):
                            return found
                return x
        """,
    "a trainer's epoch of a fixed number of steps": """
        from typing import TypeVar


        class Algorithm(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.net = nn.Linear(d, d)


        TAlgorithm = TypeVar("TAlgorithm", bound=Algorithm)


        class Trainer:
            def __init__(self, algorithm: TAlgorithm, steps):
                self.algorithm = algorithm
                self.steps = steps
                self.stop = False

            def _training_step(self, batch):
                raise NotImplementedError

            def epoch(self, batches):
                done = 0
                while done < self.steps and not self.stop:
                    result = self._training_step(next(batches))
                    done += 1
                    self.log(result)
                return done


        class OnPolicyTrainer(Trainer):
            def _training_step(self, batch):
                return self.algorithm.update(batch)
        """,
    "a line search of a fixed number of steps keeps the best": """
        class LineSearch:
            def __init__(self, policy: nn.Module, n):
                self.policy = policy
                self.n = n

            def search(self, states, old):
                def evaluate():
                    return self.policy(states)
                best = None
                for i in range(self.n):
                    gain = (evaluate() - old).mean()
                    if best is None or gain > best:
                        best = gain
                return best
        """,
    "a random mask on the input of a submodule handed to a helper method": """
        class Unet(nn.Module):
            def __init__(self):
                super().__init__()
                self.net = nn.Linear(4, 4)

            def forward(self, x):
                return self.net(x)


        class Decoder(nn.Module):
            def __init__(self, unets):
                super().__init__()
                self.unets = nn.ModuleList(unets)

            def get_unet(self, n):
                return self.unets[n - 1]

            def p_losses(self, unet, x):
                keep = torch.rand(x.shape[0]) < 0.5
                return unet(x * keep[:, None])

            def forward(self, x, unet_number=1):
                unet = self.get_unet(unet_number)
                return self.p_losses(unet, x)
        """,
    "exists() on a layer the configuration built": """
        class Unet(nn.Module):
            def __init__(self, d, lowres=False):
                super().__init__()
                self.body = nn.Linear(d, d)
                self.to_lowres = nn.Sequential(nn.Linear(1, d), nn.SiLU(), nn.Linear(d, d)) if lowres else None

            def forward(self, x, level):
                t = self.body(x)
                if exists(self.to_lowres):
                    t = t + self.to_lowres(level)
                return t
        """,
    "an optional input gates a Sequential of one layer with parameters": """
        class Unet(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.body = nn.Linear(d, d)
                self.to_cond = nn.Sequential(nn.Linear(1, d), nn.SiLU())

            def forward(self, x, level=None):
                t = self.body(x)
                if exists(level):
                    t = t + self.to_cond(level)
                return t
        """,
    "a child's method that runs none of its layers, unless the caller passed the embedding": """
        class Clip(nn.Module):
            def __init__(self):
                super().__init__()
                self.enc = nn.Linear(4, 4)

            def resize(self, x):
                return x[..., :4]


        class Decoder(nn.Module):
            def __init__(self, unconditional=False):
                super().__init__()
                self.clip = Clip()
                self.net = nn.Linear(4, 4)
                self.unconditional = unconditional

            def forward(self, image, image_embed=None):
                if not exists(image_embed) and not self.unconditional:
                    image_embed = self.clip.resize(image)
                return self.net(image_embed)
        """,
}


@pytest.mark.parametrize("name", sorted(HAZARDS))
def test_hazard(name):
    code, body = HAZARDS[name]
    codes = [f.code for f in check_source("m.py", HEADER + textwrap.dedent(body))]
    assert code in codes, codes


@pytest.mark.parametrize("name", sorted(SAFE))
def test_safe_lookalike(name):
    findings = check_source("m.py", HEADER + textwrap.dedent(SAFE[name]))
    assert not [f for f in findings if f.code.startswith("ZG2")], [(f.code, f.message) for f in findings]


def test_a_chain_of_tests_ending_in_an_exit_is_reported_once_at_the_exit():
    body = HAZARDS["a line search leaves through the else of a chain of tests on a closure's output"][1]
    findings = [f for f in check_source("m.py", HEADER + textwrap.dedent(body)) if f.code == "ZG204"]
    assert len(findings) == 1 and "`break` is reached" in findings[0].message, [(f.line, f.message) for f in findings]
