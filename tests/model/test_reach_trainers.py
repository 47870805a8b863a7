"""Gates in trainers, agents and evaluators around calls that reach a model through two or more calls of the
project's own code (`analysis/reach.py`, `script.scope_reach`): a chain of the trainer's helpers, a method of a
plain object the trainer holds or builds, a function of another file, a base class's method in another file.
Each hazard has a safe look-alike: the same gate around a chain that reaches no model, or a gate on a value
every rank shares."""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

HEADER = """
import random
import torch
import torch.distributed as dist
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(512, 512)

    def forward(self, x):
        return self.lin(x)
"""

HAZARDS = {
    "a main-process test skips sampling two helpers down, on a model handed in": """
        class Trainer:
            def __init__(self, model, accelerator):
                self.model = model
                self.accelerator = accelerator

            def sample(self, x):
                return self.model.generate(x)

            def evaluate(self, x):
                return self.sample(x).mean()

            def train(self, x):
                if self.accelerator.is_main_process:
                    self.evaluate(x)
        """,
    "a rank test skips an evaluator object the trainer holds, which runs the model": """
        class Evaluator:
            def __init__(self, model):
                self.model = model

            def run(self, x):
                return self.score(x)

            def score(self, x):
                return self.model(x).mean()

        class Trainer:
            def __init__(self, model):
                self.model = model
                self.evaluator = Evaluator(model)

            def train(self, x):
                if dist.get_rank() == 0:
                    self.evaluator.run(x)
        """,
    "a training function builds an evaluator of the model and runs it on rank 0 only": """
        class Evaluator:
            def __init__(self, model):
                self.model = model

            def run(self, x):
                return self.model(x).mean()

        def train(model, x, args):
            model.train()
            evaluator = Evaluator(model)
            if args.local_rank == 0:
                evaluator.run(x)
        """,
    "an episode loop leaves on the environment's done, the action chosen through an agent object": """
        class Agent:
            def __init__(self):
                self.policy = Net()

            def act(self, obs):
                return self.choose(obs)

            def choose(self, obs):
                return self.policy(obs).argmax()

        class Runner:
            def __init__(self, env):
                self.env = env
                self.agent = Agent()

            def rollout(self, obs):
                while True:
                    action = self.agent.act(obs)
                    obs, reward, done, info = self.env.step(action)
                    if done:
                        break
        """,
    "non-main ranks return before a helper that gathers the model's state": """
        class Trainer:
            def __init__(self, model, accelerator):
                self.model = Net()
                self.accelerator = accelerator

            def gather_state(self):
                return self.accelerator.get_state_dict(self.model)

            def save(self, path):
                if not self.accelerator.is_main_process:
                    return
                torch.save(self.gather_state(), path)
        """,
    "a random draw runs an extra evaluation through an evaluator object": """
        class Evaluator:
            def __init__(self, model):
                self.model = model

            def run(self, x):
                return self.model(x).mean()

        class Trainer:
            def __init__(self, model):
                self.model = Net()
                self.evaluator = Evaluator(self.model)

            def step(self, x):
                loss = self.model(x).mean()
                if random.random() < 0.1:
                    loss = loss + self.evaluator.run(x)
                return loss
        """,
    "a rank test replaces the update of a held average, which runs its model, with a no-op": """
        class Average:
            def __init__(self, model):
                self.shadow = Net()

            def update(self, x):
                return self.shadow(x)

        class Trainer:
            def __init__(self, model):
                self.model = Net()
                self.average = Average(self.model)
                if dist.get_rank() != 0:
                    self.average.update = lambda *args, **kwargs: None
        """,
    "an out-of-memory handler retries a pass that runs the model through an evaluator object": """
        class Evaluator:
            def __init__(self, model):
                self.model = model

            def run(self, x):
                return self.model(x).mean()

        class Trainer:
            def __init__(self, model):
                self.model = Net()
                self.evaluator = Evaluator(self.model)

            def evaluate(self, xs):
                for x in xs:
                    while True:
                        try:
                            self.evaluator.run(x)
                            break
                        except torch.cuda.OutOfMemoryError:
                            torch.cuda.empty_cache()
        """,
    "a helper runs what it is handed on rank 0, handed a partial of an evaluation": """
        import functools

        class Trainer:
            def __init__(self, model):
                self.model = Net()

            def evaluate(self, x):
                return self.model(x).mean()

            def on_main(self, fn):
                if dist.get_rank() == 0:
                    fn()

            def train(self, x):
                self.on_main(functools.partial(self.evaluate, x))
        """,
    "a solver leaves on its residual, each step running the policy through two local functions": """
        class Agent:
            def __init__(self):
                self.policy = Net()

            def update(self, states, b):
                def kl(policy_1: Net, policy_2: Net, states):
                    return (policy_1.act(states) - policy_2.act(states).detach()).pow(2).mean()

                def fvp(policy: Net, states, v):
                    return kl(policy, policy, states) + v

                def cg(policy: Net, states, b):
                    r = b.clone()
                    for _ in range(10):
                        r = r - fvp(policy, states, r)
                        if torch.dot(r, r) < 1e-10:
                            break
                    return r

                return cg(self.policy, states, b)
        """,
    "a relaxation steps until this rank's forces converge, computed by a calculator handed in": """
        from typing import Optional

        class Calculator:
            def __init__(self, model):
                self.model = Net()

            def forces(self, x):
                return self.model(x)

        class Optimizer:
            def __init__(self, calculator: Optional[Calculator], x):
                self.calculator = calculator
                self.x = x

            def converged(self):
                return bool(self.calculator.forces(self.x).abs().max() < 0.05)

            def step(self):
                self.x = self.x - 0.1 * self.calculator.forces(self.x)

            def run(self, steps):
                n = 0
                while not self.converged() and n < steps:
                    self.step()
                    n += 1
        """,
    "a plugin runs the model per sample only when what its own pass returned is negative": """
        class Plugin:
            def __init__(self):
                self.buffer = []

            def similarity(self, strategy, x):
                return float(strategy.model(x).mean())

            def per_sample(self, strategy, x):
                return [strategy.model(row) for row in x]

            def store(self, x):
                self.buffer.append(x)

            def after_forward(self, strategy, x):
                sim = self.similarity(strategy, x)
                if sim < 0:
                    self.per_sample(strategy, x)
        """,
    "a translator's decode loop leaves once this rank's hypotheses finish, a helper running the model's decoder": """
        class Translator:
            def __init__(self, model):
                self.model = model

            def _decode(self, x):
                return self.model.decoder(x)

            def translate(self, x, steps):
                for _ in range(steps):
                    x = self._decode(x)
                    if (x.argmax(-1) == 2).all():
                        break
                return x
        """,
}

SAFE = {
    "a main-process test around helpers that only log": """
        class Trainer:
            def __init__(self, model, accelerator):
                self.model = model
                self.accelerator = accelerator

            def report(self, loss):
                print(loss)

            def evaluate(self, loss):
                return self.report(loss)

            def train(self, x):
                loss = self.model(x).mean()
                if self.accelerator.is_main_process:
                    self.evaluate(loss)
        """,
    "a rank test around a held object's method that only writes files": """
        class Writer:
            def __init__(self, path):
                self.path = path

            def run(self, x):
                return self.write(x)

            def write(self, x):
                with open(self.path, "a") as f:
                    f.write(str(x))

        class Trainer:
            def __init__(self, model):
                self.model = model
                self.writer = Writer("log.txt")

            def train(self, x):
                loss = self.model(x).mean()
                if dist.get_rank() == 0:
                    self.writer.run(loss.item())
        """,
    "an episode loop whose agent draws actions at random leaves on done": """
        class Agent:
            def act(self, obs):
                return self.choose(obs)

            def choose(self, obs):
                return random.randrange(4)

        class Runner:
            def __init__(self, env):
                self.env = env
                self.agent = Agent()

            def rollout(self, obs):
                while True:
                    action = self.agent.act(obs)
                    obs, reward, done, info = self.env.step(action)
                    if done:
                        break
        """,
    "non-main ranks return before a helper that saves the settings": """
        class Trainer:
            def __init__(self, model, accelerator, config):
                self.model = Net()
                self.accelerator = accelerator
                self.config = config

            def settings(self):
                return dict(self.config)

            def save(self, path):
                if not self.accelerator.is_main_process:
                    return
                torch.save(self.settings(), path)
        """,
    "an evaluator object run every few epochs, the same on every rank": """
        class Evaluator:
            def __init__(self, model):
                self.model = model

            def run(self, x):
                return self.model(x).mean()

        class Trainer:
            def __init__(self, model):
                self.model = model
                self.evaluator = Evaluator(model)

            def train(self, x, epochs):
                for epoch in range(epochs):
                    if epoch % 5 == 0:
                        self.evaluator.run(x)
        """,
    "a rank test replaces a held logger's method that only prints with a no-op": """
        class Logger:
            def __init__(self, path):
                self.path = path

            def log(self, x):
                print(self.path, x)

        class Trainer:
            def __init__(self, model):
                self.model = Net()
                self.logger = Logger("log.txt")
                if dist.get_rank() != 0:
                    self.logger.log = lambda *args, **kwargs: None
        """,
    "an out-of-memory handler retries moving a batch, the evaluator run once after": """
        class Evaluator:
            def __init__(self, model):
                self.model = model

            def run(self, x):
                return self.model(x).mean()

        class Trainer:
            def __init__(self, model):
                self.model = Net()
                self.evaluator = Evaluator(self.model)

            def load(self, x):
                return x.cuda()

            def evaluate(self, xs):
                for x in xs:
                    while True:
                        try:
                            x = self.load(x)
                            break
                        except torch.cuda.OutOfMemoryError:
                            torch.cuda.empty_cache()
                    self.evaluator.run(x)
        """,
    "a helper runs what it is handed on rank 0, handed only a logger": """
        def on_main(fn, *args):
            if dist.get_rank() == 0:
                fn(*args)

        class Trainer:
            def __init__(self, model):
                self.model = Net()

            def log(self, x):
                print(x)

            def train(self, x):
                on_main(self.log, self.model(x).mean())
        """,
    "a solver defined in an update leaves on its residual, its steps only naming the policy": """
        class Agent:
            def __init__(self):
                self.policy = Net()

            def update(self, states, b):
                def kl(policy_1: Net, policy_2: Net, states):
                    return (policy_1.act(states) - policy_2.act(states).detach()).pow(2).mean()

                def fvp(policy: Net, states, v):
                    return len(type(policy).__name__) + v

                def cg(policy: Net, states, b):
                    r = b.clone()
                    for _ in range(10):
                        r = r - fvp(policy, states, r)
                        if torch.dot(r, r) < 1e-10:
                            break
                    return r

                return cg(self.policy, states, b)
        """,
    "a relaxation steps until this rank's forces converge, computed by a calculator with no model": """
        from typing import Optional

        class Calculator:
            def __init__(self, model):
                self.model = Net()

            def forces(self, x):
                return 2.0 * x

        class Optimizer:
            def __init__(self, calculator: Optional[Calculator], x):
                self.calculator = calculator
                self.x = x

            def converged(self):
                return bool(self.calculator.forces(self.x).abs().max() < 0.05)

            def step(self):
                self.x = self.x - 0.1 * self.calculator.forces(self.x)

            def run(self, steps):
                n = 0
                while not self.converged() and n < steps:
                    self.step()
                    n += 1
        """,
    "a plugin stores the batch only when what its own pass returned is negative": """
        class Plugin:
            def __init__(self):
                self.buffer = []

            def similarity(self, strategy, x):
                return float(strategy.model(x).mean())

            def per_sample(self, strategy, x):
                return [strategy.model(row) for row in x]

            def store(self, x):
                self.buffer.append(x)

            def after_forward(self, strategy, x):
                sim = self.similarity(strategy, x)
                if sim < 0:
                    self.store(x)
        """,
    "a saver writes on one rank through a helper that calls the save function it is handed": """
        class Saver:
            def __init__(self, model, rank):
                self.model = model
                self.rank = rank

            def _save(self, state, path, func):
                func(state, path)

            def __call__(self, state, path):
                if self.rank == dist.get_rank():
                    self._save(state, path, torch.save)
        """,
    "a runner saves on the main rank through a logger whose writer uploads the saved file": """
        class Logger:
            def __init__(self, writer_class):
                self.writer = writer_class()

            def save_model(self, path, it):
                self.writer.save_model(path, it)

        class Runner:
            def __init__(self, model, writer_class):
                self.model = model
                self.logger = Logger(writer_class)

            def save(self, path, it):
                torch.save({"it": it}, path)
                self.logger.save_model(path, it)

            def learn(self, x, it):
                loss = self.model(x).mean()
                if dist.get_rank() == 0:
                    self.save("ckpt.pt", it)
        """,
}


def _zg2(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("m.py", source) if f.code.startswith("ZG2")]


@pytest.mark.parametrize("name", sorted(HAZARDS))
def test_hazard(name):
    assert _zg2(HEADER + textwrap.dedent(HAZARDS[name]))


@pytest.mark.parametrize("name", sorted(SAFE))
def test_safe_lookalike(name):
    assert not _zg2(HEADER + textwrap.dedent(SAFE[name]))


EVALS = """
import torch


def sample(model, x):
    return model(x)


def evaluate(model, x):
    return sample(model, x).mean()


def describe(model, x):
    return type(model).__name__, x.shape
"""

BASE = """
class BaseTrainer:
    def __init__(self, model):
        self.model = model

    def validate(self, x):
        return self.predict(x)

    def predict(self, x):
        return self.model(x)

    def log(self, x):
        print(x)
"""

TRAIN = """
import torch.distributed as dist
from .evals import evaluate, describe
from .base import BaseTrainer


class Trainer(BaseTrainer):
    def step(self, x):
        if dist.get_rank() == 0:
            {call}
        return x
"""


def _package(tmp_path, call: str):
    pkg = tmp_path / "trainers"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "evals.py").write_text(textwrap.dedent(EVALS))
    (pkg / "base.py").write_text(textwrap.dedent(BASE))
    train = pkg / "train.py"
    train.write_text(textwrap.dedent(TRAIN).replace("{call}", call))
    return train


@pytest.mark.parametrize(
    "call, hazard",
    [
        ("evaluate(self.model, x)", True),  # a function of another file, through a second one there
        ("self.validate(x)", True),  # a base class's method of another file, through a helper there
        ("describe(self.model, x)", False),  # a function of another file that only names the model
        ("self.log(x)", False),  # a base class's method that only logs
    ],
)
def test_a_rank_gate_sees_what_another_files_functions_and_bases_reach(tmp_path, call, hazard):
    train = _package(tmp_path, call)
    found = [f for f in check_source(str(train), train.read_text()) if f.code == "ZG201"]
    assert bool(found) == hazard, [(f.code, f.line, f.message) for f in found]
