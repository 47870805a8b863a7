"""A class that answers a method by calling the same method on an object it keeps is a wrapper, no endpoint.

A policy handed its Q function untyped (`def __init__(self, q, eps): self.q = q`) is told what `self.q` is by the
one plain class of the package answering the methods called on it (`reach._duck_typed`). A sibling policy of the
same file answers them too, by handing each on (`def no_grad(self, s): ... self.q.no_grad(s)`): what it runs is
whatever it wraps, so it does not stand beside `Approximation` as a second answer that hides the first. The
epsilon-greedy draw that skips `self.q.no_grad(s)` is then ZG202, as with one policy in the file.
"""

from __future__ import annotations

from package_check import found_in_package
from test_duck_typed_holders import APPROX

POLICIES = """
import numpy as np
import torch


class GreedyPolicy:
    def __init__(self, q, n, eps):
        self.q = q
        self.n = n
        self.eps = eps

    def act(self, state):
        if np.random.rand() < self.eps:
            return np.random.randint(0, self.n)
        return torch.argmax(self.q.no_grad(state)).item()


class ParallelGreedyPolicy:
    def __init__(self, q, n, eps):
        self.q = q
        self.n = n
        self.eps = eps

    def no_grad(self, state):
        best = torch.argmax(self.q.no_grad(state), dim=-1)
        pick = torch.rand(best.shape) < self.eps
        return torch.where(pick, torch.randint(0, self.n, best.shape), best)
"""

# Safe: the same file with a tabular class answering `no_grad` from a dict beside the approximation: two endpoints,
# neither a wrapper, tell nothing.
TABLE = """

class Table:
    def __init__(self):
        self.values = {}

    def no_grad(self, state):
        return self.values.get(state, 0.0)
"""


def _found(tmp_path, approx: str) -> list[tuple[str, int]]:
    files = {"approx.py": approx, "policies.py": POLICIES}
    return found_in_package(tmp_path, files, "policies.py", prefix="ZG2")


def test_a_sibling_wrapper_does_not_hide_the_class_answering(tmp_path):
    assert _found(tmp_path, APPROX) == [("ZG202", 13)]


def test_two_endpoints_answering_still_tell_nothing_safe(tmp_path):
    assert _found(tmp_path, APPROX + TABLE) == []
