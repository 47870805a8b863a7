"""Models zgen cannot type that the code still shows to be models, and a package imported without `__init__.py`.

* `policy = policy_config()` in a script (a config object called to build the policy), then `policy(conditions)`: a
  local named as modules are, made by an object of this code and run on values, is a model; a rollout that leaves
  when the environment says `terminal` runs it a number of times this rank's episode decides (ZG204).
* `self.lower_level_agent.pick_action(state=s)`: a method named for the action it picks runs the agent's network.
* `r = super().forward(text, proms, resp)` in a decoding loop: the base class's forward runs the module's children,
  so a loop leaving on what it returned is a data exit (ZG204). A torch layer's subclass calling its base's forward
  runs no other module.
* `self.diffusion_model = instantiate_from_config(cfg)`: a child a model builder made, of a class no file tells. The
  module holding it may have parameters, so loading a checkpoint into `self` from `__init__` after it was built is
  a load into partitioned children (ZG108).
* `from ldm.modules.diffusionmodules.util import zero_module` in `ldm/modules/diffusionmodules/unet.py`, where only
  the last folder has an `__init__.py` (`ldm/` a namespace package at the project's top, its `setup.py` beside it):
  the helper is read, and zeroing a just-built conv with it is ZG103.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.model.package_check import found, found_in_package

ROLLOUT = """
import utils

args = utils.parse()
policy_config = utils.Config(args.policy, horizon=args.horizon)
policy = policy_config()
env = utils.make_env(args.env)
observation = env.reset()
for t in range(args.max_episode_length):
    action, samples = policy({0: observation}, batch_size=args.batch_size)
    next_observation, reward, terminal, _ = env.step(action)
    if terminal:
        break
    observation = next_observation
"""

WRAPPER = """
import numpy as np


class ManagerWrapper:
    def __init__(self, env, lower_level_agent, steps):
        self.env = env
        self.lower_level_agent = lower_level_agent
        self.steps = steps

    def step(self, skill):
        total = 0
        for _ in range(self.steps):
            state = np.concatenate((np.array(self.state), np.array([skill])))
            action = self.lower_level_agent.pick_action(eval_ep=True, state=state)
            next_state, reward, done, _ = self.env.step(action)
            total += reward
            self.state = next_state
            if done:
                break
        return next_state, total, done
"""

DECODER = """
import torch
import torch.nn as nn


class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(16, 8)
        self.head = nn.Linear(8, 16)

    def forward(self, x):
        return self.head(self.embed(x)).argmax(-1)


class AR(Base):
    stop_token = 0

    def forward(self, x, max_steps=100):
        stopped = torch.zeros(len(x), dtype=torch.bool)
        for _ in range(max_steps):
            r = super().forward(x)
            stopped |= r == self.stop_token
            if stopped.all().item():
                break
        return x


class Scaled(nn.Linear):
    def forward(self, x, max_steps=100):
        for _ in range(max_steps):
            x = super().forward(x)
            if x.abs().max().item() < 1e-3:
                break
        return x
"""

LOADED = """
import torch
import torch.nn as nn

from .util import instantiate_from_config


class Wrapper(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.diffusion_model = instantiate_from_config(config)

    def forward(self, x, t):
        return self.diffusion_model(x, t)


class DDPM(nn.Module):
    def __init__(self, unet_config, ckpt_path=None):
        super().__init__()
        self.model = Wrapper(unet_config)
        if ckpt_path is not None:
            self.init_from_ckpt(ckpt_path)

    def init_from_ckpt(self, path):
        sd = torch.load(path, map_location="cpu")
        missing, unexpected = self.load_state_dict(sd, strict=False)

    def forward(self, x, t):
        return self.model(x, t)
"""

UTIL = """
import importlib


def instantiate_from_config(config):
    module, cls = config["target"].rsplit(".", 1)
    return getattr(importlib.import_module(module), cls)(**config.get("params", dict()))
"""


def test_a_policy_a_config_object_builds_runs_in_a_rollout_that_leaves_on_terminal(tmp_path):
    (tmp_path / "utils.py").write_text("def parse():\n    return None\n")
    script = tmp_path / "plan.py"
    script.write_text(textwrap.dedent(ROLLOUT))
    assert found(script, "ZG2") == [("ZG204", 12)]


def test_a_handed_agents_pick_action_runs_its_network(tmp_path):
    assert found_in_package(tmp_path, {"wrap.py": WRAPPER}, "wrap.py", prefix="ZG2") == [("ZG204", 19)]


def test_a_decoding_loop_over_the_base_forward_leaves_on_this_ranks_tokens(tmp_path):
    assert found_in_package(tmp_path, {"ar.py": DECODER}, "ar.py", prefix="ZG2") == [("ZG204", 24)]


def test_loading_into_self_after_building_a_child_a_model_builder_made(tmp_path):
    found_here = found_in_package(tmp_path, {"util.py": UTIL, "ddpm.py": LOADED}, "ddpm.py", prefix="ZG1")
    assert found_here == [("ZG108", 26)]


def test_a_helper_of_a_namespace_package_is_read(tmp_path: Path):
    (tmp_path / "setup.py").write_text("")
    modules = tmp_path / "ldm" / "modules" / "diffusionmodules"
    modules.mkdir(parents=True)
    (modules / "__init__.py").write_text("")
    (modules / "util.py").write_text(
        "def zero_module(module):\n    for p in module.parameters():\n        p.detach().zero_()\n    return module\n"
    )
    unet = modules / "unet.py"
    unet.write_text(textwrap.dedent('''
        import torch.nn as nn

        from ldm.modules.diffusionmodules.util import zero_module


        class UNet(nn.Module):
            def __init__(self, ch):
                super().__init__()
                self.inp = nn.Conv2d(3, ch, 3)
                self.out = zero_module(nn.Conv2d(ch, 3, 3))

            def forward(self, x):
                return self.out(self.inp(x))
    '''))
    assert found(unet, "ZG1") == [("ZG103", 11)]
