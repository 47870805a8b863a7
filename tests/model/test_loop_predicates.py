"""A loop test that calls a predicate (a local lambda, a choice between lambdas, a function defined inside that
returns one expression, or a lambda the class's own call hands the method as an argument) is read through what the
predicate returns: `while move_condition():` for `move_condition = lambda: self._episodes < n_episodes` runs as long
as this rank's episodes, counted on what the step returned, last (`Taint.predicate_bodies`, read by
`divergence._output_exits`; ZG204). Look-alikes: the same predicates over a count every iteration advances."""

from __future__ import annotations

import textwrap

from zgen.model import check_source


def found(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("m.py", textwrap.dedent(source)) if f.code.startswith("ZG2")]


HEAD = """
    from torch import nn


    class Policy(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Linear(4, 2)

        def forward(self, x):
            return self.net(x)


    class Runner:
        def __init__(self, env):
            self.policy = Policy()
            self.env = env

        def _step(self, state):
            action = self.policy(state)
            next_state, reward, done = self.env.step(action)
            return next_state, reward, done
"""

HAZARDS = HEAD + """
        def run(self, n_steps=None, n_episodes=None):
            if n_steps is not None:
                move_condition = lambda: self._steps < n_steps
            else:
                move_condition = lambda: self._episodes < n_episodes
            return self._run_impl(move_condition)

        def _run_impl(self, move_condition):
            self._episodes = 0
            self._steps = 0
            state = self.env.reset()
            while move_condition():
                sample = self._step(state)
                self._steps += 1
                state = sample[0]
                if sample[-1]:
                    self._episodes += 1

        def run_local(self, n_episodes):
            episodes = 0
            cond = lambda: episodes < n_episodes
            state = self.env.reset()
            while cond():
                sample = self._step(state)
                state = sample[0]
                if sample[-1]:
                    episodes += 1

        def run_closure(self, n_episodes):
            episodes = 0

            def running():
                return episodes < n_episodes

            state = self.env.reset()
            while running():
                sample = self._step(state)
                state = sample[0]
                episodes += int(sample[-1])
"""


def test_a_loop_test_calling_a_predicate_over_this_ranks_episode_count_is_a_data_dependent_exit():
    assert found(HAZARDS) == [("ZG204", 35), ("ZG204", 46), ("ZG204", 59)]


def test_predicates_over_a_count_every_iteration_advances_are_clean():
    assert found(HEAD + """
        def run(self, n_steps):
            return self._run_impl(lambda: self._steps < n_steps)

        def _run_impl(self, move_condition):
            self._steps = 0
            state = self.env.reset()
            while move_condition():
                sample = self._step(state)
                state = sample[0]
                self._steps += 1

        def run_local(self, n_steps):
            steps = 0
            cond = lambda: steps < n_steps
            state = self.env.reset()
            while cond():
                sample = self._step(state)
                state = sample[0]
                steps += 1
    """) == []
