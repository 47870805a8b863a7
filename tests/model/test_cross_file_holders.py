"""Helpers of another file of the package run on held models, and holders that keep their models in a
container object: the call site gets the finding (issue 20, blind3's misses as general facts)."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

from package_check import write_package

SYNC = """
import torch
from torch import nn

def soft_sync(targ_model: nn.Module, model: nn.Module, tau: float) -> None:
    with torch.no_grad():
        params = model.parameters()
        targ_params = targ_model.parameters()
        for p, p_targ in zip(params, targ_params):
            p_targ.data.mul_(1 - tau)
            p_targ.data.add_(tau * p.data)

def freeze(model: nn.Module) -> None:
    for p in model.parameters():
        p.requires_grad = False
"""

NETS = """
from torch import nn

__all__ = ["Policy"]

class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(1024, 1024)

    def forward(self, x):
        return self.fc(x)

class Stats:
    def __init__(self):
        self.count = 0
"""

IMPL = """
import dataclasses
from ..models import Policy
from ..models.nets import Stats
from ..utility import soft_sync, freeze

@dataclasses.dataclass(frozen=True)
class Modules:
    policy: Policy
    targ_policy: Policy

@dataclasses.dataclass(frozen=True)
class Records:
    seen: Stats
    targ_seen: Stats

class Agent:
    _modules: Modules

    def __init__(self, modules: Modules, records: Records, policy: Policy, tau: float):
        self._modules = modules
        self._records = records
        self._policy = policy
        self._tau = tau

    def update_target(self) -> None:
        soft_sync(self._modules.targ_policy, self._modules.policy, self._tau)

    def update_records(self) -> None:
        soft_sync(self._records.targ_seen, self._records.seen, self._tau)

    def polyak(self, other: "Agent") -> None:
        soft_sync(self._policy, other._policy, self._tau)

    def stop_training(self) -> None:
        freeze(self._modules.policy)
"""


def _package(tmp_path):
    files = {"models/__init__.py": "from .nets import *\n", "models/nets.py": NETS, "utility.py": SYNC,
             "algos/impl.py": IMPL}
    return write_package(tmp_path, files, "agents") / "algos" / "impl.py"


def test_a_sync_helper_of_another_file_writes_the_held_target_at_the_call(tmp_path):
    impl = _package(tmp_path)
    found = [(f.code, f.line) for f in check_source(str(impl), impl.read_text())]
    # the target policy is a field of the container the agent declares (`_modules: Modules`), its class found
    # through the package's `from .nets import *`; the plain attribute `self._policy` is held as before
    assert found == [("ZG101", 27), ("ZG101", 33)]


def test_fields_that_are_no_modules_and_a_flag_change_stay_clean(tmp_path):
    impl = _package(tmp_path)
    found = check_source(str(impl), impl.read_text())
    assert not any(f.line in (30, 36) for f in found)  # `Stats` holds no module; freeze sets a flag only


CALLBACK = """
from torch import nn
from torch_ema import ExponentialMovingAverage as EMA

class Task(nn.Module):
    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

class AverageCallback:
    def __init__(self, decay):
        self.decay = decay
        self.ema = None

    def on_fit_start(self, trainer, pl_module: Task):
        if self.ema is None:
            self.ema = EMA(pl_module.model.parameters(), decay=self.decay)
        self.ema.copy_to()

    def on_train_batch_end(self, trainer, pl_module: Task):
        self.ema.update()

class WeightsCallback:
    def __init__(self, decay):
        self.decay = decay
        self.ema = None

    def on_fit_start(self, trainer, pl_module: Task):
        self.ema = EMA(pl_module.loss_weights, decay=self.decay)

    def on_train_batch_end(self, trainer, pl_module: Task):
        self.ema.update()
"""


def test_an_average_of_a_given_models_parameters_made_in_a_hook_copies_and_updates_them():
    # torch_ema's average clones the parameters it is given and its update/copy_to read or write them: built in a
    # hook from a submodule of the module handed in, not only in `__init__` from a held model
    found = [(f.code, f.line) for f in check_source("callbacks.py", textwrap.dedent(CALLBACK))]
    # updating blends the model's parameters into the average (ZG303); an average of plain tensors: nothing
    assert found == [("ZG105", 17), ("ZG101", 18), ("ZG101", 21), ("ZG303", 21)]


WRAPPERS = """
from typing import Sequence, Union
import torch
from torch import nn

class OptimizerWrapper:
    def __init__(self, params: Sequence[nn.Parameter], optim: torch.optim.Optimizer, clip: float = 0.0):
        self._params = params
        self._optim = optim
        self._clip = clip

    def step(self) -> None:
        if self._clip:
            nn.utils.clip_grad_norm_(self._params, max_norm=self._clip)
        self._optim.step()

class Checkpointer:
    _modules: dict[str, Union[nn.Module, torch.optim.Optimizer]]

    def __init__(self, modules: dict[str, Union[nn.Module, torch.optim.Optimizer]], steps: dict[str, int]):
        self._modules = modules
        self._steps = steps

    def save(self, f) -> None:
        modules = {k: v for k, v in self._modules.items()}
        torch.save({k: v.state_dict() for k, v in modules.items()}, f)

    def load(self, f) -> None:
        chkpt = torch.load(f)
        for k, v in self._modules.items():
            v.load_state_dict(chkpt[k])

    def save_steps(self, f) -> None:
        torch.save({k: v.state_dict() for k, v in self._steps.items()}, f)

class Scheduler:
    def __init__(self, params: Sequence[float], optim: torch.optim.Optimizer):
        self._params = params

    def step(self) -> None:
        nn.utils.clip_grad_norm_(self._params, max_norm=1.0)
"""


def test_an_optimizer_wrapper_and_a_checkpointer_use_what_they_hold():
    # the parameters the wrapper was built with are the model's (ZG107); the checkpointer's container declares
    # modules, whose state it saves and loads (ZG108); a container of counts and a list of floats hold nothing
    found = [(f.code, f.line) for f in check_source("wrappers.py", textwrap.dedent(WRAPPERS))]
    assert found == [("ZG107", 14), ("ZG108", 26), ("ZG108", 31)]


SAVERS = """
import torch
from torch import nn

class MaskGit(nn.Module):
    def __init__(self, dim, config):
        super().__init__()
        self.emb = nn.Embedding(32000, dim)
        self.config = config

    def save(self, path):
        torch.save(self.state_dict(), path)

    def load(self, path):
        self.load_state_dict(torch.load(path))

    def save_config(self, path):
        torch.save(self.config, path)

class Task(nn.Module):
    def __init__(self, model: MaskGit, outputs):
        super().__init__()
        self.model = model
        self.settings = outputs

    def save_model(self, path):
        torch.save(self.model, path)

    def save_settings(self, path):
        torch.save(self.settings, path)

class Trainer:
    def __init__(self, model: MaskGit):
        self.model = model

    def export(self, path):
        torch.save(self.model, path)
"""


def test_a_model_saved_or_loaded_by_its_own_methods_or_pickled_whole():
    # `save`/`load` methods run on the built model; `torch.save(model)` pickles its placeholders; a config or
    # a settings object saved the same way holds no parameter
    found = [(f.code, f.line) for f in check_source("savers.py", textwrap.dedent(SAVERS))]
    assert found == [("ZG108", 12), ("ZG108", 15), ("ZG108", 27), ("ZG108", 37)]


EVALUATION = """
import numpy as np

def evaluate(algo, env, n_trials: int = 10, epsilon: float = 0.0) -> float:
    rewards = []
    for _ in range(n_trials):
        observation, _ = env.reset()
        while True:
            if np.random.random() < epsilon:
                action = env.action_space.sample()
            else:
                action = algo.predict(observation)[0]
            observation, reward, done, truncated, _ = env.step(action)
            if done or truncated:
                break
        rewards.append(reward)
    return float(np.mean(rewards))

def rollout(algo, env, n_steps: int = 100) -> None:
    observation, _ = env.reset()
    for _ in range(n_steps):
        observation, *_ = env.step(algo.predict(observation))

def train(agent, env, steps: int) -> None:
    observation = env.reset()
    for t in range(1, steps + 1):
        observation, reward, done, info = env.step(agent.act(observation))
        episode_end = done or t == steps
        if episode_end:
            observation = env.reset()
            if t == steps:
                break
"""


def test_an_evaluation_loop_of_an_algorithm_object_ends_per_rank():
    # `algo.predict` runs the model the algorithm holds: an epsilon draw gates it (ZG202) and the episode ends
    # when this rank's environment is done (ZG204); a fixed number of steps is the same on every rank, and so is
    # a break at the last step under `episode_end = done or t == steps` (the inner test decides it alone)
    found = {(f.code, f.line) for f in check_source("evaluation.py", textwrap.dedent(EVALUATION))}
    assert ("ZG202", 9) in found and ("ZG204", 14) in found
    assert not any(line > 18 for _code, line in found)


WRAPPED = """
import torch
from torch import nn

class Autopadder(nn.Module):
    def __init__(self, net, pad_dim=-1):
        super().__init__()
        self.net = net
        self.pad_dim = pad_dim

    def forward(self, x):
        return self.net(x)

class Sampler(nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = Autopadder(net)

    @torch.no_grad()
    def generate(self, out, seq_len, eos_token):
        for _ in range(seq_len):
            sample = self.net(out)[:, -1:].argmax(-1)
            out = torch.cat((out, sample), dim=-1)
            if (sample == eos_token).all():
                break
        return out

    @torch.no_grad()
    def generate_fixed(self, out, seq_len):
        for _ in range(seq_len):
            out = torch.cat((out, self.net(out)[:, -1:].argmax(-1)), dim=-1)
        return out
"""


def test_a_wrapper_around_a_module_handed_in_may_own_parameters():
    # Autopadder registers no parameter itself but runs the module it was handed: decoding through it until EOS
    # ends per rank; a fixed number of steps does not
    found = [(f.code, f.line) for f in check_source("wrapped.py", textwrap.dedent(WRAPPED))]
    assert found == [("ZG204", 24)]


COPY_FOR_EVAL = """
import copy
from typing import Optional
from torch import nn

class VAE(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.enc = nn.Linear(dim * 64, dim * 64)

    def copy_for_eval(self):
        vae_copy = copy.deepcopy(self.cpu())
        return vae_copy.eval()

    def codebook_size(self):
        return self.enc.out_features

class MaskGit(nn.Module):
    def __init__(self, vae: Optional[VAE] = None, cond_vae: Optional[VAE] = None):
        super().__init__()
        self.vae = vae.copy_for_eval() if vae is not None else None
        self.size = cond_vae.codebook_size() if cond_vae is not None else 0
"""


def test_a_method_of_the_module_handed_in_that_copies_it_runs_in_init():
    # the VAE was built (partitioned under zero.Init) by the caller; its copy_for_eval deep-copies it (line 12 is
    # the method itself, run on a built model). Asking it for a size copies nothing
    found = [(f.code, f.line) for f in check_source("maskgit.py", textwrap.dedent(COPY_FOR_EVAL))]
    assert [line for code, line in found if code == "ZG105"] == [12, 21]


PROPERTY = """
import torch
from torch import nn
from accelerate import Accelerator

class Trainer(nn.Module):
    def __init__(self, model: nn.Module, optimizer_kwargs: dict):
        super().__init__()
        self.accelerator = Accelerator()
        self.model = model
        self.optimizer = torch.optim.Adam(model.parameters(), **optimizer_kwargs)

    @property
    def unwrapped_model(self):
        return self.accelerator.unwrap_model(self.model)

    @property
    def settings(self):
        return dict(steps=self.steps)

    def save(self, path):
        torch.save(dict(model=self.unwrapped_model.state_dict(), settings=self.settings), path)
"""


def test_a_property_returning_the_held_model_holds_it():
    found = [(f.code, f.line) for f in check_source("trainer.py", textwrap.dedent(PROPERTY))]
    assert found == [("ZG108", 22)]


SIZING = """
import torch
from torch import nn

def compute_output_size(shape, encoder: nn.Module) -> int:
    with torch.no_grad():
        return int(encoder(torch.rand(2, *shape)).shape[1])

def count_parameters(encoder: nn.Module) -> int:
    return sum(1 for _ in encoder.children())

class Policy(nn.Module):
    def __init__(self, encoder, hidden, n):
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(hidden, n)

def create_policy(shape, factory, n):
    encoder = factory.create(shape)
    hidden = compute_output_size(shape, encoder)
    policy = Policy(encoder, hidden, n)
    return policy

def create_policy_from_config(shape, factory, n, hidden):
    encoder = factory.create(shape)
    count_parameters(encoder)
    policy = Policy(encoder, hidden, n)
    return policy
"""


def test_a_builder_sizing_an_encoder_it_made_by_running_it():
    # under zero.Init the encoder is partitioned once made; a helper that runs it computes with placeholders.
    # A helper that only lists its children runs nothing
    found = [(f.code, f.line) for f in check_source("builders.py", textwrap.dedent(SIZING))]
    assert found == [("ZG110", 20)]


RANK_PROPERTY = """
import torch
from torch import nn
from accelerate import Accelerator

class Trainer(nn.Module):
    def __init__(self, model: nn.Module, lr: float):
        super().__init__()
        self.accelerator = Accelerator()
        self.model = model
        self.optimizer = torch.optim.Adam(model.parameters(), lr=lr)

    @property
    def is_main(self):
        return self.accelerator.is_main_process

    @property
    def should_validate(self):
        return self.lr > 0

    def validate(self, x):
        if self.is_main:
            self.model(x)

    def maybe_validate(self, x):
        if self.should_validate:
            self.model(x)
"""


def test_a_property_returning_the_rank_is_a_rank_test():
    found = [(f.code, f.line) for f in check_source("trainer.py", textwrap.dedent(RANK_PROPERTY))]
    assert found == [("ZG201", 22)]


PROPERTIES = """
import torch
from torch import nn

def hard_sync(targ_model, model) -> None:
    with torch.no_grad():
        for p, p_targ in zip(model.parameters(), targ_model.parameters()):
            p_targ.data.copy_(p.data)

class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(1024, 1024)

class ImplBase:
    @property
    def policy(self) -> Policy:
        raise NotImplementedError

    @property
    def policy_optim(self) -> torch.optim.Optimizer:
        raise NotImplementedError

    def copy_policy_from(self, impl: "ImplBase") -> None:
        hard_sync(self.policy, impl.policy)

    def copy_policy_optim_from(self, impl: "ImplBase") -> None:
        hard_sync(self.policy_optim, impl.policy_optim)
"""


def test_a_property_annotated_as_a_module_is_held():
    # a subclass answers `policy` (abstract here); the annotation says it is a module. An optimizer property
    # handed to the same helper is no module of ours
    found = [(f.code, f.line) for f in check_source("impl.py", textwrap.dedent(PROPERTIES))]
    assert ("ZG101", 25) in found and not any(line == 28 for _code, line in found)
