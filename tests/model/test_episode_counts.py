"""Counts that grow with this rank's data, models a plain object declares, and helpers that agree by delegation.

* A loop that ends when a count reaches a bound (`while current_episode < test_episodes`) runs the model a number of
  times this rank's data decides when the count grows under a test of that data (`if terminals[i]: current_episode +=
  1`), or by a field of a batch counting its samples (`self.samples += batch.samples`): ZG204. Look-alikes: a count
  grown by one each step, a count grown under a test of a setting.
* A plain object's attribute annotated with a module class (`self.policy: Optional[Module] = None` in a base agent,
  set by a subclass's builder) holds a model: its methods run it.
* A package function that hands back what another one agreed on (`def dist_avg(v): return dist_sum(v) / world()`,
  `dist_sum` all-reducing) agrees too: a test of `kl = dist_avg(kl)` is the same on every rank.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.model.package_check import found_in_package
from zgen.model import check_source

AGENT = """
from typing import Optional

from torch.nn import Module


class Agent:
    def __init__(self, config):
        self.config = config
        self.policy: Optional[Module] = None


class OffPolicyAgent(Agent):
    def get_actions(self, obs):
        _, actions, _ = self.policy(obs)
        return {"actions": actions.detach().cpu().numpy()}

    def test(self, envs, test_episodes, num_envs):
        current_episode = 0
        obs, infos = envs.reset()
        while current_episode < test_episodes:
            out = self.get_actions(obs)
            obs, rewards, terminals, truncations, infos = envs.step(out["actions"])
            for i in range(num_envs):
                if terminals[i] or truncations[i]:
                    current_episode += 1

    def warm_up(self, envs, steps):
        done_steps = 0
        obs, infos = envs.reset()
        while done_steps < steps:
            out = self.get_actions(obs)
            obs, rewards, terminals, truncations, infos = envs.step(out["actions"])
            done_steps += 1
            if self.config.verbose:
                done_steps += 1
"""


def _zg2(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("m.py", textwrap.dedent(source)) if f.code.startswith("ZG2")]


def test_episodes_counted_on_this_ranks_terminal_flags_decide_how_often_a_declared_policy_runs():
    assert _zg2(AGENT) == [("ZG204", 21)]  # not `warm_up`: one step per step, or a setting's test


SAMPLES = """
import torch


class Trainer:
    def __init__(self, model: torch.nn.Module, max_samples, max_updates):
        self.model = model
        self.max_samples = max_samples
        self.max_updates = max_updates
        self.samples = 0
        self.updates = 0

    def fit(self, train_iter):
        while True:
            if self.updates >= self.max_updates:
                break
            if self.samples >= self.max_samples:
                break
            batch = train_iter.next()
            self.samples += batch.samples
            self.updates += 1
            self.model(batch.source).mean().backward()
"""


def test_a_count_of_the_samples_this_ranks_batches_held_decides_the_exit():
    assert _zg2(SAMPLES) == [("ZG204", 17)]


DISTRIBUTED = """
import torch.distributed as dist


def world():
    return dist.get_world_size()


def dist_op(value, op):
    dist.all_reduce(value, op=op)
    return value


def dist_sum(value):
    return dist_op(value, dist.ReduceOp.SUM)


def dist_avg(value):
    return dist_sum(value) / world()
"""

POLICY = """
import torch
from torch import nn

from . import distributed


class Learner:
    def __init__(self, actor: nn.Module, target_kl):
        self.actor = actor
        self.target_kl = target_kl

    def update(self, obs, old, iters):
        for i in range(iters):
            new = self.actor(obs)
            kl = (old - new).pow(2).mean()
            kl = distributed.dist_avg(kl)
            if kl.item() > self.target_kl:
                break

    def update_local(self, obs, old, iters):
        for i in range(iters):
            new = self.actor(obs)
            kl = (old - new).pow(2).mean()
            if kl.item() > self.target_kl:
                break
"""


def test_a_helper_handing_back_an_agreed_value_agrees_by_delegation(tmp_path: Path):
    found = found_in_package(tmp_path, {"distributed.py": DISTRIBUTED, "policy.py": POLICY}, "policy.py", prefix="ZG2")
    assert found == [("ZG204", 25)]  # only the rank's own KL


VALIDATION = """
import torch
from torch import nn


class Folding(nn.Module):
    def __init__(self, validators):
        super().__init__()
        self.trunk = nn.Linear(4096, 4096)
        self.validators = validators

    def forward(self, x):
        return self.trunk(x)

    def validation_step(self, batch, batch_idx):
        validator = self.validators[0]
        try:
            out = validator.run_model(model=self, batch=batch)
            validator.process(out)
        except RuntimeError as e:
            if "out of memory" in str(e):
                torch.cuda.empty_cache()
                return
            raise e

    def summary_step(self, batch):
        try:
            return {"n": len(batch)}
        except RuntimeError:
            return None
"""


def test_a_handler_that_skips_the_rest_of_a_pass_run_by_a_call_handed_the_module_reaches_down_to_its_return():
    found = [(f.code, f.line, f.end_line) for f in check_source("m.py", textwrap.dedent(VALIDATION))
             if f.code.startswith("ZG2")]
    assert found == [("ZG204", 20, 23)]  # not the summary: nothing there runs the module


ROLLOUT = """
import torch
from torch import nn


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.pi = nn.Linear(4096, 4096)

    def step(self, obs):
        out = self.pi(obs)
        return out, out.sum(), out.mean(), out.max()


class Adapter:
    def __init__(self, env):
        self._env = env

    def rollout(self, steps: int, agent: ActorCritic, buffer):
        obs, _ = self._env.reset()
        for step in range(steps):
            act, value_r, value_c, logp = agent.step(obs)
            obs, reward, cost, terminated, truncated, info = self._env.step(act)
            for idx in range(len(terminated)):
                if truncated[idx]:
                    _, value_r, value_c, _ = agent.step(info["final_observation"][idx])
                buffer.finish_path(value_r, idx)
"""


def test_a_rollout_runs_the_agent_again_only_for_this_ranks_timed_out_episodes():
    assert ("ZG203", 25) in _zg2(ROLLOUT)


STATE = """
import torch


class State:
    def __init__(self):
        self.samples = 0


class Trainer:
    def __init__(self, model_object: torch.nn.Module, max_samples):
        self.model_object = model_object
        self.max_samples = max_samples
        self.state = State()

    def fit(self, train_iter):
        while True:
            if self.max_samples is not None and self.state.samples >= self.max_samples:
                break
            self._step(batch=train_iter.next())

    def _step(self, batch):
        self.state.samples += batch.samples
        loss = self.model_object(batch.source)
        loss.backward()
"""


def test_a_count_another_method_grows_by_this_ranks_batch_decides_the_exit_of_the_loop_calling_it():
    assert _zg2(STATE) == [("ZG204", 18)]


EMPTY_BATCHES = """
def train(model, train_loader, optimizer, layers):
    for i, batch in enumerate(train_loader):
        if len(batch) == 0:
            continue
        model(batch).mean().backward()
        optimizer.step()
    for layer in layers:
        if len(layer) == 0:
            continue
        model(layer)
"""


def test_an_empty_batch_of_a_loader_skipped_before_the_model_runs():
    assert _zg2(EMPTY_BATCHES) == [("ZG203", 4)]  # not the list of layers: no loader
