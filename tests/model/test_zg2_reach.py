"""What runs a submodule, seen the same way wherever the decision sits (the ZG2 matrix, `bench/zg2_matrix.py`): a
child of a held model reached by index, key, `getattr` or `.forward`; a bound `forward` kept in a local and called
later; a function of the file handed the module (or a held model) that runs it; the rank a trainer keeps on itself.
Each hazard has a safe look-alike that must stay clean."""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

HEADER = """
import random
import torch
import torch.distributed as dist
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return self.lin(x)


def aux_loss(model, h):
    return model.head(h).pow(2).mean()


def log_stats(model, h):
    print(model.training, h.mean().item())
"""

HAZARDS = {
    "a trainer runs one layer of the model it holds on rank 0": """
        class Trainer:
            def __init__(self, model):
                self.model = model

            def step(self, x):
                if dist.get_rank() == 0:
                    x = self.model.layers[1](x)
                return x.mean()
        """,
    "a function given the model runs a keyed child on a random draw": """
        def step(model, x):
            if random.random() < 0.5:
                x = model.blocks["extra"](x)
            return x
        """,
    "a function given the model runs a child through getattr for one rank": """
        def step(model, x, name):
            if dist.get_rank() == 0:
                x = getattr(model, name)(x)
            return x
        """,
    "a bound forward kept in a local runs on a random draw": """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = Block()

            def forward(self, x):
                fn = self.head.forward
                if torch.rand(()) < 0.5:
                    x = fn(x)
                return x
        """,
    "a loss helper handed the module runs its head on rank 0": """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = Block()

            def forward(self, x):
                if dist.get_rank() == 0:
                    x = x + aux_loss(self, x)
                return x
        """,
    "a trainer keeps the rank and runs the model on rank 0": """
        class Trainer:
            def __init__(self, model):
                self.model = model
                self.rank = dist.get_rank()

            def step(self, x):
                if self.rank == 0:
                    x = self.model(x)
                return x
        """,
    "an agent hands its policy to a helper on rank 0": """
        class Policy(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = Block()

            def forward(self, x):
                return self.head(x)


        class Agent:
            def __init__(self):
                self.policy = Policy()

            def act(self, x):
                if dist.get_rank() == 0:
                    x = aux_loss(self.policy, x)
                return x
        """,
}

SAFE = {
    "a trainer reads the held model's configuration on rank 0": """
        class Trainer:
            def __init__(self, model):
                self.model = model

            def step(self, x):
                y = self.model.layers[1](x)
                if dist.get_rank() == 0:
                    print(self.model.config.to_json_string())
                return y.mean()
        """,
    "a bound forward kept in a local runs on every rank": """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = Block()

            def forward(self, x):
                fn = self.head.forward
                x = fn(x)
                if dist.get_rank() == 0:
                    print(x.mean().item())
                return x
        """,
    "a helper handed the module on rank 0 runs none of its layers": """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = Block()

            def forward(self, x):
                x = self.head(x)
                if dist.get_rank() == 0:
                    log_stats(self, x)
                return x
        """,
    "a trainer keeps the rank and only logs on rank 0": """
        class Trainer:
            def __init__(self, model):
                self.model = model
                self.rank = dist.get_rank()

            def step(self, x):
                loss = self.model(x).mean()
                if self.rank == 0:
                    print(loss.item())
                return loss
        """,
}


@pytest.mark.parametrize("name", sorted(HAZARDS))
def test_hazard(name):
    findings = check_source("m.py", HEADER + textwrap.dedent(HAZARDS[name]))
    assert [f for f in findings if f.code.startswith("ZG2")], [(f.code, f.message) for f in findings]


@pytest.mark.parametrize("name", sorted(SAFE))
def test_safe_lookalike(name):
    findings = check_source("m.py", HEADER + textwrap.dedent(SAFE[name]))
    assert not [f for f in findings if f.code.startswith("ZG2")], [(f.code, f.message) for f in findings]
