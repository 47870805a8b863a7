"""ZG2 in trainers, agents and evaluators (h-zg2pkg): a step skipped on this rank's values (a NaN loss, a batch
with no labels), a failure this rank raised and caught (a bad value, an exception class of the program, a failed
backward), and a model reached through another file, a base trainer's template method, a method handing back
the model, an object built in `setup()` or an agent's action method, each beside a safe look-alike."""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

HEAD = """
import math

import torch
import torch.distributed as dist
from torch import nn


class NaNLoss(Exception):
    pass


class ConfigMissing(KeyError):
    pass


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4096, 4096)

    def forward(self, x):
        return self.fc(x)


class Trainer:
    def __init__(self, model: Net, loader, optimizer):
        self.model = model
        self.loader = loader
        self.optimizer = optimizer
        self.max_norm = 1.0

    def log_samples(self, x):
        return self.model(x)

    def step(self, batch):
        loss = self.model(batch).mean()
        if torch.isnan(loss):
            raise NaNLoss()
        loss.backward()
        return loss

    def run(self):
{body}
"""

HAZARDS = {
    "a batch with no labels skips a helper running the model": """
for x, y in self.loader:
    if y.sum() == 0:
        continue
    self.log_samples(x)
""",
    "an empty field of this rank's batch skips a helper": """
for batch in self.loader:
    if batch["ids"].numel() == 0:
        continue
    self.log_samples(batch["ids"])
""",
    "a NaN loss skips a helper": """
for batch in self.loader:
    loss = self.model(batch).mean()
    if torch.isnan(loss):
        continue
    self.log_samples(batch)
""",
    "a NaN loss, tested by its method, skips the rest of the step": """
for batch in self.loader:
    loss = self.model(batch).mean()
    if loss.isnan():
        continue
    self.model(batch)
""",
    "a bad value caught around a step": """
for batch in self.loader:
    try:
        self.step(batch)
    except ValueError:
        continue
""",
    "an exception class of the program caught around a step": """
for batch in self.loader:
    try:
        self.step(batch)
    except NaNLoss:
        continue
""",
    "a failed backward caught and the step dropped": """
for batch in self.loader:
    loss = self.model(batch).mean()
    try:
        loss.backward()
    except RuntimeError:
        self.optimizer.zero_grad()
        continue
    self.optimizer.step()
""",
}

SAFE = {
    "an empty buffer of the trainer's own": """
for batch in self.loader:
    if self.queue.numel() == 0:
        continue
    self.log_samples(batch)
""",
    "a NaN test of a loss every rank agreed on": """
for batch in self.loader:
    loss = self.model(batch).mean()
    dist.all_reduce(loss)
    if torch.isnan(loss):
        continue
    self.log_samples(batch)
""",
    "an infinite setting, the same on every rank": """
for batch in self.loader:
    if math.isinf(self.max_norm):
        continue
    self.log_samples(batch)
""",
    "a NaN loss only logged": """
for batch in self.loader:
    loss = self.model(batch).mean()
    if torch.isnan(loss):
        print("nan")
    self.log_samples(batch)
""",
    "a bad value raised again": """
for batch in self.loader:
    try:
        self.step(batch)
    except ValueError as e:
        print(e)
        raise
""",
    "an API probe of the program's own (a KeyError)": """
for batch in self.loader:
    try:
        self.step(batch)
    except ConfigMissing:
        continue
""",
}


def _zg2(source: str, path: str = "m.py") -> list:
    return [f for f in check_source(path, source) if f.code.startswith("ZG2")]


def _line(source: str, text: str, offset: int = 0) -> int:
    """The line of `source` holding `text` first, plus `offset`."""
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line) + offset


def _run(body: str) -> str:
    return HEAD.format(body=textwrap.indent(textwrap.dedent(body).strip("\n"), " " * 8))


def _in_run(body: str) -> list:
    """The ZG2 findings of `run`'s body (`step`'s own raise on this rank's NaN loss is one of its own, ZG204)."""
    source = _run(body)
    start = _line(source, "def run(")
    return [f for f in _zg2(source) if f.line > start]


def test_the_steps_raise_on_its_own_nan_loss_found() -> None:
    source = _run("pass")
    assert [(f.code, f.line) for f in _zg2(source)] == [("ZG204", _line(source, "if torch.isnan(loss):"))]


@pytest.mark.parametrize("body", HAZARDS.values(), ids=HAZARDS.keys())
def test_a_step_skipped_or_caught_on_this_ranks_values_found(body: str) -> None:
    found = _in_run(body)
    assert len(found) == 1, found


@pytest.mark.parametrize("body", SAFE.values(), ids=SAFE.keys())
def test_a_test_every_rank_answers_alike_or_a_failure_raised_again_clean(body: str) -> None:
    assert _in_run(body) == []


NETS = """
import torch
from torch import nn


class Policy(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.body = nn.Linear(d, 4096)

    def forward(self, x):
        return self.body(x)

    def get_action(self, obs):
        return self.forward(obs).argmax(-1)


class Diffusion(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.unet = nn.Linear(d, 4096)

    def forward(self, x):
        return self.unet(x).mean()

    def sample(self, n):
        x = torch.randn(n, 16)
        for _ in range(4):
            x = self.unet(x)
        return x
"""

AGENT = """
class Agent:
    def __init__(self, policy):
        self.policy = policy

    def act(self, obs):
        return self.choose(obs)

    def choose(self, obs):
        return self.policy.get_action(obs)
"""

EVALUATION = """
def evaluate(model, loader):
    return [model(batch) for batch in loader]


class Evaluator:
    def __init__(self, loader):
        self.loader = loader

    def run(self, model):
        return evaluate(model, self.loader)


class Logger:
    def __init__(self, path):
        self.path = path

    def log(self, values):
        print(self.path, values)
"""

BASE = """
class BaseTrainer:
    def __init__(self, model, loader):
        self.model = model
        self.loader = loader

    def validate(self):
        return self.validation_step()

    def validation_step(self):
        raise NotImplementedError

    def report(self):
        return self.summary()

    def summary(self):
        raise NotImplementedError
"""

TRAINER = """
import torch.distributed as dist

from .agent import Agent
from .base import BaseTrainer
from .evaluation import Evaluator, Logger, evaluate
from .nets import Diffusion, Policy


class Trainer(BaseTrainer):
    def __init__(self, model: Diffusion, policy: Policy, loader, accelerator):
        super().__init__(model, loader)
        self.agent = Agent(policy)
        self.accelerator = accelerator
        self.evaluator = None
        self.logger = None

    def setup(self):
        self.evaluator = Evaluator(self.loader)
        self.logger = Logger("out")

    def validation_step(self):
        return evaluate(self.model, self.loader)

    def summary(self):
        return {"steps": 1}

    def unwrapped(self):
        return self.accelerator.unwrap_model(self.model)

    def act_on_main(self, obs):
        if dist.get_rank() == 0:
            self.agent.act(obs)

    def validate_on_main(self):
        if dist.get_rank() == 0:
            self.validate()

    def evaluate_on_main(self):
        if dist.get_rank() == 0:
            self.evaluator.run(self.model)

    def sample_on_main(self):
        if dist.get_rank() == 0:
            self.unwrapped().sample(4)

    def sample_local_on_main(self):
        model = self.unwrapped()
        if dist.get_rank() == 0:
            model.sample(4)

    def report_on_main(self):
        if dist.get_rank() == 0:
            self.report()

    def log_on_main(self):
        if dist.get_rank() == 0:
            self.logger.log({"a": 1})

    def save_on_main(self):
        if dist.get_rank() == 0:
            print(self.unwrapped().state_dict())
"""


def _package(tmp_path):
    pkg = tmp_path / "proj"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name, text in (("nets", NETS), ("agent", AGENT), ("evaluation", EVALUATION), ("base", BASE),
                       ("trainer", TRAINER)):
        (pkg / f"{name}.py").write_text(textwrap.dedent(text))
    return pkg / "trainer.py"


def test_a_rank_gate_skips_a_model_reached_through_another_file_found(tmp_path) -> None:
    """An agent's action method two calls from the policy's `get_action`, a base trainer's template method running
    the subclass's override, an evaluator built in `setup()`, a method handing back the model (called directly
    and through a local): each runs the model on the main rank alone."""
    path = _package(tmp_path)
    found = {f.line for f in _zg2(path.read_text(), str(path))}
    text = path.read_text()
    at = {name: _line(text, f"def {name}(", +1) for name in (
        "act_on_main", "validate_on_main", "evaluate_on_main", "sample_on_main", "report_on_main", "log_on_main",
        "save_on_main")}
    at["sample_local_on_main"] = _line(text, "def sample_local_on_main(", +2)
    hazards = {"act_on_main", "validate_on_main", "evaluate_on_main", "sample_on_main", "sample_local_on_main"}
    assert {at[name] for name in hazards} <= found, (found, at)
    # a template method whose override runs nothing, an object built in `setup()` that runs no model, the model's
    # state read on the main rank: clean
    assert not {at["report_on_main"], at["log_on_main"], at["save_on_main"]} & found, (found, at)


SCRIPT = """
import torch
import torch.distributed as dist
import deepspeed
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4096, 4096)

    def forward(self, x):
        return self.fc(x)


def generate_samples(model, n):
    return model(torch.randn(n, 4096))


def count_samples(model, n):
    return sum(p.numel() for p in model.parameters()) * n


def main(args, loader):
    engine, _, _, _ = deepspeed.initialize(args=args, model=Net())
    for step, batch in enumerate(loader):
        loss = engine(batch).mean()
        engine.backward(loss)
        engine.step()
        if dist.get_rank() == 0:
            generate_samples(engine.module, 4)
        if dist.get_rank() == 0:
            count_samples(engine.module, 4)
        if torch.isnan(loss):
            continue
        generate_samples(engine, 2)


def fit(model: Net, loader):
    for batch in loader:
        loss = model(batch).mean()
        if loss.item() > 100:
            continue
        generate_samples(model, 2)


def fit_agreed(model: Net, loader):
    for batch in loader:
        loss = model(batch).mean()
        dist.all_reduce(loss)
        if loss.item() > 100:
            continue
        generate_samples(model, 2)
"""


def test_a_partitioned_model_handed_to_a_helper_or_tested_by_value_in_a_script_found() -> None:
    """`generate_samples(engine.module, 4)` on the main rank runs the partitioned model; a NaN loss or a loss over a
    bound skips a helper running it on this rank alone. A helper only counting the parameters, and a loss every
    rank agreed on, are clean."""
    at = {n: _line(SCRIPT, n) for n in ("generate_samples(engine.module", "count_samples(engine.module",
                                        "torch.isnan(loss)")}
    found = {f.line for f in _zg2(SCRIPT)}
    hazards = {at["generate_samples(engine.module"] - 1, at["torch.isnan(loss)"]}
    assert hazards <= found, (found, at)
    assert at["count_samples(engine.module"] - 1 not in found, (found, at)
    fit_line = _line(SCRIPT, "def fit(", +3)
    agreed_line = _line(SCRIPT, "def fit_agreed(", +4)
    assert fit_line in found and agreed_line not in found, (found, fit_line, agreed_line)


LIT = """
import torch
from torch import nn


class Sampler:
    def __init__(self, steps):
        self.steps = steps

    def sample(self, model, x):
        for _ in range(self.steps):
            x = model(x)
        return x


class Logger:
    def __init__(self, path):
        self.path = path

    def log(self, values):
        print(self.path, values)


class Unet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4096, 4096)

    def forward(self, x):
        return self.fc(x)


class Lit(nn.Module):
    def __init__(self):
        super().__init__()
        self.unet = Unet()
        self.sampler = Sampler(4)
        self.logger = Logger("out")

    def training_step(self, batch):
        return self.unet(batch).mean()

    def on_validation_epoch_end(self):
        if self.global_rank == 0:
            self.make_grid()

    def on_train_epoch_end(self):
        if self.global_rank == 0:
            self.write_stats()

    def validation_step(self, batch):
        try:
            loss = self.draw()
        except RuntimeError:
            return None
        return loss

    def make_grid(self):
        return self.draw()

    def draw(self):
        return self.sampler.sample(self.unet, torch.zeros(1, 4096))

    def write_stats(self):
        self.logger.log({"steps": 1})
"""


def test_a_module_helper_running_a_child_through_a_plain_object_found() -> None:
    """`self.make_grid()` -> `self.draw()` -> `self.sampler.sample(self.unet, x)`: two helpers of the module down, a
    plain object it holds runs its child; skipped on the main rank alone, or when it raised on this rank. A helper
    whose plain object runs nothing (`self.logger.log(...)`) is clean."""
    gate = _line(LIT, "def on_validation_epoch_end", +1)
    stats = _line(LIT, "def on_train_epoch_end", +1)
    caught = _line(LIT, "except RuntimeError")
    found = {f.line for f in _zg2(LIT)}
    assert {gate, caught} <= found and stats not in found, (found, gate, caught, stats)


DECORATED = """
import copy

import torch
from torch import nn
from mmengine.dist import master_only


class Unet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4096, 4096)

    def forward(self, x, t):
        return self.fc(x) * t


class Consistency(nn.Module):
    def __init__(self, model: Unet):
        super().__init__()
        self.model = model
        self.model_ema = copy.deepcopy(model)

    def _forward(self, model: nn.Module, images, times):
        return model(images, times)

    def sample(self, n):
        return self._forward(self.model_ema, torch.randn(n, 4096), 1.0)

    def save_samples(self, name):
        return self.sample(4)

    @master_only
    def on_train_start(self):
        self.save_samples("first")

    @master_only
    def on_train_end(self):
        print("done")
"""

ACCELERATED = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4096, 4096)

    def forward(self, x):
        return self.fc(x)

    def sample(self, n):
        return self(torch.randn(n, 4096))


class Trainer:
    def __init__(self, model: Net, accelerator, loader, writer):
        self.model = model
        self.accelerator = accelerator
        self.loader = loader
        self.writer = writer

    def train(self):
        for batch in self.loader:
            loss = self.model(batch).mean()
            self.accelerator.backward(loss)
            self.writer.add_scalar("loss", loss.item())
            if self.accelerator.sync_gradients:
                self.model(batch)
            if self.accelerator.is_local_main_process:
                self.accelerator.unwrap_model(self.model).sample(4)
"""


def test_a_main_process_method_reaching_a_child_handed_to_a_helper_found() -> None:
    """`@master_only` runs the method on rank 0 alone; `save_samples` -> `sample` -> `self._forward(self.model_ema,
    ...)` runs the copy of the model. A decorated method that runs no model is clean."""
    found = {f.line for f in _zg2(DECORATED)}
    first = _line(DECORATED, "def on_train_start", -1)
    last = _line(DECORATED, "def on_train_end", -1)
    assert first in found and last not in found, (found, first, last)


def test_an_unwrapped_model_sampled_on_the_main_process_found_and_wrapper_flags_are_no_data() -> None:
    """`self.accelerator.unwrap_model(self.model).sample(4)` on the local main process runs the model there alone; the
    loss handed to the accelerator's `backward` or written to a board makes neither object this rank's data
    (`sync_gradients` is every rank's)."""
    found = [(f.code, f.line) for f in _zg2(ACCELERATED)]
    gate = _line(ACCELERATED, "is_local_main_process")
    sync = _line(ACCELERATED, "sync_gradients")
    assert ("ZG201", gate) in found, found
    assert not [f for f in found if f[1] == sync] and not [f for f in found if f[0] != "ZG201"], found


EVALUATOR = """
import torch.distributed as dist


class Evaluator:
    def __init__(self, env):
        self.env = env
        self._policy = None

    def reset_policy(self, policy):
        self._policy = policy

    def eval(self, obs):
        if dist.get_rank() == 0:
            out = self._policy.forward(obs)
            out = self._policy.forward(out)
        dist.barrier()

    def main_first(self):
        if dist.get_rank() == 0:
            dist.barrier()
        else:
            dist.barrier()
"""


def test_an_objects_forward_twice_on_the_main_rank_found() -> None:
    """`self._policy.forward(obs)` runs what the evaluator was handed as a model's forward; two such calls in the one
    branch a rank test opens run on the main rank alone (a call made once in each branch is every rank's)."""
    found = [(f.code, f.line) for f in _zg2(EVALUATOR)]
    gate = _line(EVALUATOR, "def eval(", +1)
    first = _line(EVALUATOR, "def main_first(", +1)
    assert ("ZG201", gate) in found and not [f for f in found if f[1] == first], found


EPSILON = """
import numpy as np


class Tokenizer:
    def predict(self, text):
        return text.split()


class EpsGreedy:
    def __init__(self, epsilon, n_actions):
        self._epsilon = epsilon
        self._n = n_actions
        self._approximator = None
        self._tokens = Tokenizer()

    def set_q(self, approximator):
        self._approximator = approximator

    def draw_action(self, state):
        if not np.random.uniform() < self._epsilon:
            return self._approximator.predict(state).argmax()
        return np.random.choice(self._n)

    def words(self, text):
        if np.random.uniform() < self._epsilon:
            return self._tokens.predict(text)
        return []
"""


def test_an_approximator_the_class_was_handed_predicting_under_a_draw_found() -> None:
    """`self._approximator.predict(state)` (set from an argument, a model that answers) skipped by an
    epsilon-greedy draw; a plain object of a class we read whose `predict` runs no model is clean."""
    found = {f.line for f in _zg2(EPSILON)}
    draw = _line(EPSILON, "def draw_action(", +1)
    words = _line(EPSILON, "def words(", +1)
    assert draw in found and words not in found, (found, draw, words)


UNREADABLE = """
import torch.distributed as dist


class Trainer:
    def __init__(self, model, accelerator, loader):
        self.model = model
        self.accelerator = accelerator
        self.loader = loader

    def train(self):
        for batch in self.loader:
            loss = self.model(batch).mean()
            self.accelerator.backward(loss)
            if dist.get_rank() == 0:
                self.visualize()
            if dist.get_rank() == 0:
                self.describe()

    def visualize(self):
        images = self.model.sample(4)
        return images

    def describe(self):
        return self.model.print_summary()

    def card_on_main(self):
        if self.accelerator.is_main_process:
            self.accelerator.unwrap_model(self.model).create_or_update_model_card("out")

    def save_on_main(self):
        if self.accelerator.is_main_process:
            self.accelerator.unwrap_model(self.model).save_checkpoint("out")

    def generate_on_main(self, prompt):
        if self.accelerator.is_main_process:
            self.accelerator.unwrap_model(self.model).generate(prompt)

    def sample_on_main(self):
        if self.accelerator.is_main_process:
            self.accelerator.unwrap_model(self.model).sample(4)
"""


def test_a_method_of_an_unreadable_model_runs_it_unless_its_name_says_it_keeps_or_describes_it() -> None:
    """A model handed in untyped (no class we read defines its methods): `generate`, `sample` run it, on the main
    process alone, directly or through a method of the trainer; a model card, a checkpoint or a printed summary
    name no way of running it, so their rank gates are clean."""
    found = {f.line for f in _zg2(UNREADABLE)}
    hazards = {_line(UNREADABLE, "def train(", 4), _line(UNREADABLE, "def generate_on_main", 1),
               _line(UNREADABLE, "def sample_on_main", 1)}
    safe = {_line(UNREADABLE, "def train(", 6), _line(UNREADABLE, "def card_on_main", 1),
            _line(UNREADABLE, "def save_on_main", 1)}
    assert hazards <= found and not safe & found, (found, hazards, safe)


HANDED_UNTYPED = """
import deepspeed
import torch.distributed as dist


def describe(model, out):
    with open(out, "w") as f:
        model.summary(print_fn=print)


def describe_twice(model, out):
    describe(model, out)


def stamp(model, epoch):
    model.set_epoch(epoch)


def preview(model):
    return model.sample(4)


def preview_twice(model):
    return preview(model)


class Runner:
    def __init__(self, model):
        self.model = model

    def stamp(self, epoch):
        self.model.set_epoch(epoch)

    def run(self, loader):
        engine, *_ = deepspeed.initialize(model=self.model)
        for epoch, batch in enumerate(loader):
            engine.backward(engine(batch))
            if dist.get_rank() == 0:
                self.stamp(epoch)


def train(model, loader, out):
    engine, *_ = deepspeed.initialize(model=model)
    for epoch, batch in enumerate(loader):
        engine.backward(engine(batch))
        if dist.get_rank() == 0:
            describe(engine, out)
        if dist.get_rank() == 0:
            describe_twice(engine, out)
        if dist.get_rank() == 0:
            stamp(engine, epoch)
        if dist.get_rank() == 0:
            preview(engine)
        if dist.get_rank() == 0:
            preview_twice(engine)
"""


def test_a_function_handed_an_untyped_model_runs_it_by_the_same_names_as_a_method() -> None:
    """A function of the file handed the model (no class we read): what it calls on the model is judged by the
    method's name, as a trainer's method is (`runs_unread`): `sample` runs it, directly or through a second
    function; a printed summary and a setter (`set_epoch`, also from a plain class's method) run nothing, so their
    rank gates are clean."""
    found = {f.line for f in _zg2(HANDED_UNTYPED)}
    gates = [i for i, line in enumerate(HANDED_UNTYPED.splitlines(), 1) if "dist.get_rank() == 0" in line]
    hazards, safe = set(gates[-2:]), set(gates[:-2])
    assert hazards <= found and not safe & found, (found, hazards, safe)


TWO_GATES = """
import deepspeed
import torch.distributed as dist


def rollout(env, policy):
    obs, done = env.reset(), False
    while not done:
        action = policy.select_action(obs)
        obs, done = env.step(action)


def train(policy, loader, env):
    engine, _, _, _ = deepspeed.initialize(model=policy)
    for batch in loader:
        if dist.get_rank() != 0:
            dist.barrier()
        engine.backward(engine(batch))
        if not dist.get_rank() == 0:
            pass
        else:
            dist.barrier()
        if dist.get_rank() == 0:
            rollout(env, engine)
        if dist.get_rank() == 0:
            rollout(env, engine.module)
"""


def test_one_call_under_two_like_rank_gates_runs_on_the_main_rank_alone() -> None:
    """The same helper under two `if rank == 0:` of their own runs twice on the main rank and never elsewhere; a
    barrier under `rank != 0` and again in the `else` of `not rank == 0` ("main process first") is every rank's."""
    found = {f.line for f in _zg2(TWO_GATES)}
    gates = {_line(TWO_GATES, "rollout(env, engine)", -1), _line(TWO_GATES, "rollout(env, engine.module)", -1)}
    first = {_line(TWO_GATES, "if dist.get_rank() != 0:"), _line(TWO_GATES, "if not dist.get_rank() == 0:")}
    assert gates <= found and not first & found, (found, gates, first)
