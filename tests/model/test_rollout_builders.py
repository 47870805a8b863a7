"""Facts from blind24 and probes of the issue's kinds (issue 20), each with a look-alike that stays clean.

* A child built by a builder object made only to call one of its methods (`CriticBuilder(obs).build_critic("v")`,
  in another file) is what that method returns; a plain value's builder builds no module. A rollout of another file
  calling such a model's `step` under a per-environment test runs it a per-rank number of times (ZG203).
* A test that calls a helper running the model and then leaves the loop (`if samples >= max: self._checkpoint();
  break`) is told as the exit (ZG204): every later call of the loop is skipped.
* A loop over a count a batch carries of its own items (`range(data.num_graphs)`) runs as often as the batch is
  large (ZG204); the world's size (`accelerator.num_processes`) and a setting (`cfg.num_layers`) do not.
* What is left of an input after a filter on its items (`[s for s in sentences if len(s) > 0]`) may be empty on this
  rank alone; a filter on what an item is (`if f is not None`) keeps the model's own structure.
* The keys of a field of the batch (`for task in batch["labels"]: self.heads[task](h)`) pick the heads (ZG203).
* `self.apply(init_fn)` of a function another file defines that writes the visited module's children's weights
  loses those writes (ZG103, at this file's `apply`); one writing only the visited module's own weight does not.
* A model module-level script code builds and keeps is partitioned under `zero.Init`: a random gate around it is
  ZG202, as in a function.
"""

from __future__ import annotations

from tests.model.package_check import found_in_package

BUILDER = """
from torch import nn


class CriticBuilder:
    def __init__(self, obs_dim):
        self._obs_dim = obs_dim

    def build_critic(self, kind):
        if kind == "v":
            return nn.Linear(self._obs_dim, 1)
        return nn.Linear(self._obs_dim, 2)


class RateBuilder:
    def __init__(self, base):
        self._base = base

    def build(self):
        return self._base * 2
"""

ACTOR_CRITIC = """
import torch
from torch import nn
from pkg.builder import CriticBuilder, RateBuilder


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.reward_critic = CriticBuilder(4).build_critic("v")
        self.rate = RateBuilder(0.1).build()

    def step(self, obs):
        with torch.no_grad():
            return self.reward_critic(obs)

    def scale(self, obs):
        return obs * self.rate
"""

ROLLOUT = """
from pkg.models import ActorCritic


class Adapter:
    def __init__(self, env):
        self._env = env

    def rollout(self, steps, agent: ActorCritic, buffer):
        obs = self._env.reset()
        for step in range(steps):
            value = agent.step(obs)
            obs, reward, terminated, truncated, info = self._env.step(value)
            for idx, time_out in enumerate(truncated):
                if time_out:
                    last = agent.step(info["final_observation"][idx])
                    buffer.finish(idx, last)
                if time_out:
                    buffer.finish(idx, agent.scale(obs))
"""


def test_a_child_a_builder_method_returns_is_a_module_whose_step_a_rollout_gates(tmp_path):
    files = {"builder.py": BUILDER, "models.py": ACTOR_CRITIC, "rollout.py": ROLLOUT}
    found = found_in_package(tmp_path, files, "rollout.py", prefix="ZG2")
    assert ("ZG203", 15) in found  # `if time_out:` before `agent.step(...)`
    assert ("ZG203", 18) not in found  # `agent.scale(obs)` runs no submodule: `self.rate` is a number


LOOP_EXIT = """
import torch
from torch import nn


class Trainer:
    def __init__(self, model: nn.Module, max_samples):
        self.model = model
        self.max_samples = max_samples
        self.samples = 0
        self.updates = 0

    def _evaluate(self, loader):
        with torch.no_grad():
            for batch in loader:
                self.model(batch.source)

    def _step(self, batch):
        self.model(batch.source).backward()
        self.samples += batch.samples
        self.updates += 1

    def fit(self, train_iter, val_iter, max_updates):
        while True:
            if self.samples >= self.max_samples:
                self._evaluate(val_iter)
                break
            if self.updates >= max_updates:
                self._evaluate(val_iter)
                break
            self._step(train_iter.next())
"""


def test_a_test_that_runs_a_helper_then_leaves_the_loop_is_told_as_the_exit(tmp_path):
    found = found_in_package(tmp_path, {"trainer.py": LOOP_EXIT}, "trainer.py", prefix="ZG2")
    assert ("ZG204", 25) in found  # this rank's own sample count
    assert not any(line == 28 for _code, line in found)  # the update count grows by one on every rank


COUNTS = """
import torch
from torch import nn


class PerGraph(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.head = nn.Linear(16, 1)
        self.layers = nn.ModuleList([nn.Linear(16, 16) for _ in range(cfg.num_layers)])

    def forward(self, data, cfg):
        x = data.x
        for i in range(cfg.num_layers):
            x = self.layers[i](x)
        outs = []
        for i in range(data.num_graphs):
            outs.append(self.head(x[data.batch == i]).sum())
        return torch.stack(outs)


def evaluate(model: nn.Module, accelerator, n):
    per_proc = n // accelerator.num_processes
    for i in range(0, per_proc, 4):
        model(torch.zeros(4, 16))
"""


def test_a_loop_over_a_batch_count_of_its_items_runs_per_rank(tmp_path):
    found = found_in_package(tmp_path, {"graphs.py": COUNTS}, "graphs.py", prefix="ZG2")
    assert found == [("ZG204", 17)]


FILTERED = """
import torch
from torch import nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(8, 8)
        self.out = nn.Linear(8, 4)

    def forward_loss(self, sentences):
        sentences = [s for s in sentences if len(s) > 0]
        if not sentences:
            return torch.tensor(0.0)
        return self.out(self.encoder(torch.stack(sentences))).sum()

    def fuse(self, feats):
        feats = [f for f in feats if f is not None]
        if not feats:
            return None
        return self.out(self.encoder(torch.stack(feats))).sum()
"""


def test_an_input_filtered_on_its_items_may_be_empty_on_this_rank_alone(tmp_path):
    found = found_in_package(tmp_path, {"tagger.py": FILTERED}, "tagger.py", prefix="ZG2")
    assert found == [("ZG204", 14)]


FIELD_KEYS = """
from torch import nn


class MultiTask(nn.Module):
    def __init__(self, tasks):
        super().__init__()
        self.tasks = list(tasks)
        self.heads = nn.ModuleDict({t: nn.Linear(8, 2) for t in tasks})
        self.body = nn.Linear(8, 8)

    def forward(self, batch):
        h = self.body(batch["x"])
        losses = {task: self.heads[task](h).sum() for task in batch["labels"]}
        for task in self.tasks:
            losses[task] = losses.get(task, 0) + self.heads[task](h).mean()
        return losses
"""


def test_the_keys_of_a_batch_field_pick_the_heads(tmp_path):
    found = found_in_package(tmp_path, {"multitask.py": FIELD_KEYS}, "multitask.py", prefix="ZG2")
    assert found == [("ZG203", 14)]


INITS = """
from torch import nn


def init_children(module):
    if isinstance(module, Attention):
        nn.init.normal_(module.q_proj.weight.data)


def init_own(module):
    if isinstance(module, nn.Linear):
        nn.init.normal_(module.weight.data)


class Attention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.q_proj = nn.Linear(d, d)
"""

ENCODER = """
from torch import nn
from pkg.inits import Attention, init_children, init_own


class Encoder(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.attn = Attention(d)
        self.apply(init_children)


class Decoder(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.attn = Attention(d)
        self.apply(init_own)
"""


def test_an_imported_apply_callback_writing_children_weights_loses_them(tmp_path):
    found = found_in_package(tmp_path, {"inits.py": INITS, "encoder.py": ENCODER}, "encoder.py", prefix="ZG103")
    assert found == [("ZG103", 10)]


# A single-file RL script's network (module-level code below builds it).
Q_NETWORK = """
import torch
from torch import nn


class QNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)

"""

SCRIPT = """
import random
""" + Q_NETWORK + """
q_network = QNetwork()
obs = torch.zeros(4)
for global_step in range(1000):
    if random.random() < 0.1:
        action = 0
    else:
        action = q_network(obs).argmax()
    if random.random() < 0.5:
        obs = torch.randn(4)
"""


def test_a_model_module_level_code_builds_is_partitioned(tmp_path):
    found = found_in_package(tmp_path, {"dqn.py": SCRIPT}, "dqn.py", prefix="ZG2")
    assert found == [("ZG202", 20)]


BASE = """
import torch
from torch import nn


class BaseModule(nn.Module):
    def on_validation_end(self, trainer):
        if trainer.is_global_zero:
            output = self.synthesise(torch.zeros(1, 4))
            trainer.log_image(output)
        if trainer.is_global_zero:
            trainer.log_text(self.describe())
"""

HEIR = """
import torch
from torch import nn
from pkg.base import BaseModule


class Matcha(BaseModule):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(4, 4)

    def synthesise(self, x):
        return self.encoder(x)

    def describe(self):
        return "matcha"
"""


def test_a_method_only_subclasses_of_other_files_define_runs_their_layers(tmp_path):
    found = found_in_package(tmp_path, {"base.py": BASE, "heir.py": HEIR}, "base.py", prefix="ZG2")
    assert found == [("ZG201", 8)]  # `describe` of the subclass runs no layer


SCRIPT_TARGET = Q_NETWORK + """
q_network = QNetwork().to("cpu")
target_network = QNetwork().to("cpu")
target_network.load_state_dict(q_network.state_dict())
stats = {"steps": 0}
for step in range(10):
    for target_param, param in zip(target_network.parameters(), q_network.parameters()):
        target_param.data.copy_(0.005 * param.data + 0.995 * target_param.data)
    stats["steps"] += 1
"""


def test_models_module_level_code_builds_are_partitioned_for_their_whole_uses(tmp_path):
    found = found_in_package(tmp_path, {"sac.py": SCRIPT_TARGET}, "sac.py", prefix="ZG1")
    assert ("ZG108", 17) in found  # the target loads the online network's state
    assert ("ZG101", 21) in found  # the polyak update writes the target's parameters
    assert not any(line in (18, 23) for _code, line in found)


OPTIONAL_KEYWORDS = """
from typing import Optional

import torch
from torch import nn


class NodeEmbedding(nn.Module):
    def __init__(self, n_nodes, emb_size):
        super().__init__()
        self.emb = nn.Parameter(torch.empty(n_nodes, emb_size))

    def forward(self, expand=None, node_index=None):
        return self.emb if node_index is None else self.emb[node_index]


class STID(nn.Module):
    def __init__(self, n_nodes, hidden, n_exog):
        super().__init__()
        self.node_emb = NodeEmbedding(n_nodes, hidden)
        self.exog_embs = nn.ModuleList([NodeEmbedding(s, hidden) for s in n_exog])
        self.out = nn.Linear(hidden, 1)

    def forward(self, x, u: Optional[torch.Tensor] = None, scale: Optional[float] = None):
        z = [self.node_emb(expand=x.shape)]
        if u is not None:
            for u_idx, u_emb in enumerate(self.exog_embs):
                z.append(u_emb(expand=x.shape, node_index=u[..., u_idx]))
        if scale is not None:
            z.append(self.node_emb(expand=x.shape) * scale)
        return self.out(torch.stack(z).sum(0))
"""


def test_an_embedding_run_on_an_optional_input_by_keyword_is_skipped_without_it(tmp_path):
    found = found_in_package(tmp_path, {"stid.py": OPTIONAL_KEYWORDS}, "stid.py", prefix="ZG2")
    assert found == [("ZG205", 26)]  # the second test gates a layer that also runs either way

