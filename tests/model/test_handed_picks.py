"""A module picked at random out of a container and handed to a method that runs it.

ReAgent's CEM planner draws `mem_net_idx = np.random.randint(0, len(self.mem_net_list))` for each trajectory and
hands `mem_net=self.mem_net_list[mem_net_idx]` to `sample_reward_next_state_terminal`, which calls it: ranks
drawing differently run different world models. Handing the pick to a method that only reads its settings runs
nothing.
"""

from __future__ import annotations

from zgen.model import check_source

PLANNER = """
import numpy as np
from torch import nn


class Planner(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.nets = nn.ModuleList([nn.Linear(d, d) for _ in range(n)])

    def step(self, state, net):
        return net(state)

    def width(self, net):
        return net.in_features

    def forward(self, state):
        idx = np.random.randint(0, len(self.nets))
        out = self.step(state, net=self.nets[idx])
        picked = self.nets[np.random.randint(0, len(self.nets))]
        return out, self.width(picked)
"""


def test_a_random_pick_handed_to_a_method_that_runs_it():
    found = [(f.code, f.line) for f in check_source("planner.py", PLANNER)]
    assert found == [("ZG202", 19)]
