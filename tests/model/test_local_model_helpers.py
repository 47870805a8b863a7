"""A function defined inside a method, handed a model the class holds, runs that model when its body calls it.

A TRPO line search evaluates `kl = kl_divergence(self.old_policy, self.policy, states)` with a local helper
that runs `policy_1.act(states)`; the loop stops when the KL computed from this rank's batch is small enough,
so ranks run the policy a different number of times (ZG204). A helper that only lists, moves or switches the
mode of the model it is given runs nothing, and a loop that stops on a counter is the same on every rank.
"""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

AGENT = """
import torch
from torch import nn


class Agent:
    def __init__(self, policy: nn.Module, old_policy: nn.Module):
        self.policy = policy
        self.old_policy = old_policy

    def line_search(self, states, max_kl):
{helper}
        for step in range(10):
            value = measure(self.old_policy, self.policy, states)
            if {stop}:
                break
"""

RUNS = """
        def measure(policy_1, policy_2, s):
            return ((policy_1.act(s) - policy_2.act(s)) ** 2).mean()
"""
CALLS = """
        def measure(policy_1, policy_2, s):
            return ((policy_1(s) - policy_2(s)) ** 2).mean()
"""
BOOKKEEPING = """
        def measure(policy_1, policy_2, s):
            policy_1.eval()
            return sum(p.numel() for p in policy_2.parameters()) * s.sum()
"""


def codes(helper: str, stop: str) -> list[str]:
    source = AGENT.format(helper=helper, stop=stop)
    return sorted(f.code for f in check_source("m.py", textwrap.dedent(source)) if f.code.startswith("ZG2"))


@pytest.mark.parametrize("helper", [RUNS, CALLS], ids=["method-of-the-model", "the-model-called"])
def test_a_data_stop_after_a_local_helper_that_runs_the_model(helper):
    assert "ZG204" in codes(helper, "value < max_kl")


@pytest.mark.parametrize(
    ("helper", "stop"),
    [(BOOKKEEPING, "value < max_kl"), (RUNS, "step == 3")],
    ids=["helper-only-does-bookkeeping", "stop-on-a-counter"],
)
def test_look_alike_is_clean(helper, stop):
    assert codes(helper, stop) == []
