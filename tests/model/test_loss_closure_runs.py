"""A loss closure handed to a function runs the model: `loss_fn().item()`, `loss = closure(); loss.backward()`.

A line search or a fit loop is handed a function of no arguments that evaluates the model on the caller's batch
(`lambda: self.actor(x).mean()`). Reading the result as a tensor (`.item()`, `.backward()`) says it is one: each
call runs the model's forward, so a loop that stops on this rank's loss runs it a different number of times per
rank. A zero-argument callable whose result is not read as a tensor (a progress callback, an environment factory)
stays a hook.
"""

from __future__ import annotations

from package_check import found_in_package

SEARCH = """
def line_search(loss_fn, kl_fn, max_kl, steps=10):
    base = loss_fn().item()
    for i in range(steps):
        new = loss_fn().item()
        if kl_fn().item() <= max_kl and base - new > 0:
            return i
    return -1


def fit_until(closure, tol):
    loss = closure()
    while loss.item() > tol:
        loss = closure()
        loss.backward()
    return loss


def evaluate_all(loss_fn, steps):
    total = 0.0
    for i in range(steps):
        total += loss_fn().item()
    return total


def run_with_progress(callback, n):
    done = 0
    for i in range(n):
        done += 1
        callback()
        if done > 5:
            break
    return done


def rollout(env_fn, n):
    env = env_fn()
    for i in range(n):
        obs = env_fn().reset()
        if obs is None:
            break
    return env
"""

AGENT = """
from torch import nn

from .search import evaluate_all, fit_until, line_search, rollout, run_with_progress


class Agent:
    def __init__(self):
        self.actor = nn.Linear(4, 1)

    def update(self, x):
        loss_fn = lambda: self.actor(x).mean()
        line_search(loss_fn, lambda: self.actor(x).var(), 0.01)
        fit_until(lambda: self.actor(x).pow(2).mean(), 0.1)
        evaluate_all(loss_fn, 3)
        run_with_progress(lambda: print("x"), 10)
        rollout(lambda: None, 3)
"""


def _found(tmp_path):
    return found_in_package(tmp_path, {"search.py": SEARCH, "agent.py": AGENT}, "search.py", prefix="ZG2")


def test_line_search_stopping_on_this_ranks_loss_runs_the_closure_a_data_dependent_number_of_times(tmp_path):
    assert ("ZG204", 6) in _found(tmp_path)


def test_a_fit_loop_on_a_closures_loss_is_found(tmp_path):
    assert ("ZG204", 13) in _found(tmp_path)


def test_fixed_counts_progress_callbacks_and_factories_stay_clean(tmp_path):
    assert [line for _, line in _found(tmp_path) if line > 17] == []
