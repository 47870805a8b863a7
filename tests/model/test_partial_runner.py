"""A function that binds its model argument into `functools.partial` of a function running it runs the model.

`eval_policy_all(envs, policy, n)` builds `runner = partial(run_one, policy=policy, n_episodes=n)` and calls it
once per task, in a loop or through an executor's `submit`. A partial is built to be called, so handing the model
to it hands it to `run_one` (`runs._partial_of_function`): a caller that runs `eval_policy_all` on the main
process only runs the policy there alone (ZG201). A partial of a function that only reads the model's sizes runs
nothing.
"""

from __future__ import annotations

from package_check import found_in_package

POLICY = """
from torch import nn


class Policy(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d, 512), nn.Linear(512, 4))

    def forward(self, batch):
        return self.net(batch).pow(2).mean()

    def select_action(self, obs):
        return self.net(obs).argmax(-1)
"""

EVALUATE = """
from functools import partial
import concurrent.futures as cf


def rollout(env, policy, steps):
    obs = env.reset()
    for _ in range(steps):
        obs = env.step(policy.select_action(obs))
    return obs


def run_one(group, env, *, policy, n_episodes):
    return group, [rollout(env, policy, 100) for _ in range(n_episodes)]


def describe(group, env, *, policy, n_episodes):
    return group, sum(p.numel() for p in policy.parameters())


def eval_policy_all(envs, policy, n_episodes):
    runner = partial(run_one, policy=policy, n_episodes=n_episodes)
    with cf.ThreadPoolExecutor(max_workers=4) as ex:
        futures = [ex.submit(runner, g, e) for g, e in envs.items()]
    return [f.result() for f in futures]


def describe_all(envs, policy, n_episodes):
    runner = partial(describe, policy=policy, n_episodes=n_episodes)
    return [runner(g, e) for g, e in envs.items()]
"""

TRAIN = """
import torch
from accelerate import Accelerator
from .policy import Policy
from .evaluate import {name}


def train(cfg, loader, envs):
    accelerator = Accelerator()
    policy = Policy(cfg.d)
    opt = torch.optim.Adam(policy.parameters())
    policy, opt = accelerator.prepare(policy, opt)
    for step, batch in enumerate(loader):
        accelerator.backward(policy(batch))
        opt.step()
        if step % cfg.eval_freq == 0 and accelerator.is_main_process:
            print({name}(envs, accelerator.unwrap_model(policy), cfg.n))
"""


def _found(tmp_path, name: str) -> list[tuple[str, int]]:
    files = {"policy.py": POLICY, "evaluate.py": EVALUATE, "train.py": TRAIN.format(name=name)}
    return found_in_package(tmp_path, files, "train.py", prefix="ZG2")


def test_main_process_runs_a_partial_of_the_rollout(tmp_path):
    assert _found(tmp_path, "eval_policy_all") == [("ZG201", 16)]


def test_partial_of_a_function_reading_sizes_runs_nothing_safe(tmp_path):
    assert _found(tmp_path, "describe_all") == []
