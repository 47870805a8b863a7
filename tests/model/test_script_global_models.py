"""A model a script builds at its top (`policy = Policy()`) is a global its functions run: directly (`probs =
policy(state)`) or through a helper of the file (`action = select_action(state)` for a `select_action` that calls
`policy`). An episode loop that breaks on the environment's `done` runs it a data-dependent number of times (ZG204;
`script.global_models`, `_runs_a_global_model`). Look-alike: a helper whose parameter of the same name hides the
global."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SCRIPT = """
import torch
from torch import nn


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 128)
        self.b = nn.Linear(128, 2)

    def forward(self, x):
        return self.b(self.a(x))


policy = Policy()


def select_action(state):
    probs = policy(torch.as_tensor(state))
    return probs.argmax().item()


def through_a_helper(env):
    for episode in range(100):
        state = env.reset()
        for t in range(1, 10000):
            state, reward, done, _ = env.step(select_action(state))
            if done:
                break


def directly(env):
    state, done = env.reset(), False
    while not done:
        state, reward, done, _ = env.step(policy(torch.as_tensor(state)).argmax().item())
"""


def found(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("reinforce.py", textwrap.dedent(source)) if f.code.startswith("ZG2")]


def test_an_episode_loop_runs_a_global_model_directly_or_through_a_helper():
    assert found(SCRIPT) == [("ZG204", 29), ("ZG204", 35)]


def test_a_name_the_function_binds_itself_hides_the_global():
    hidden = SCRIPT.replace("def select_action(state):", "def select_action(state, policy=None):")
    assert found(hidden) == [("ZG204", 35)]
