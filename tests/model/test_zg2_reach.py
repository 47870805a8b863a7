"""What runs a submodule, seen the same way wherever the decision sits (the ZG2 matrix, `bench/zg2_matrix.py`): a
child of a held model reached by index, key, `getattr` or `.forward`; a bound `forward` kept in a local and called
later; a function of the file handed the module (or a held model) that runs it; the rank a trainer keeps on itself;
a key of an input mapping (tested, read with `.get`, or walked); a helper skipped outright by a data test; a loop
count read from a tensor with `.item()`. Each hazard has a safe look-alike that must stay clean."""

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
    "a trainer runs the image tower only when the batch has images": """
        class Trainer:
            def __init__(self, model):
                self.model = model

            def step(self, batch):
                h = self.model(batch["text"])
                if "image" in batch:
                    h = h + self.model.image_tower(batch["image"])
                return h.mean()
        """,
    "a field read with get gates a tower": """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.tower = Block()

            def forward(self, x, batch):
                if batch.get("ctx") is not None:
                    x = x + self.tower(batch["ctx"])
                return x
        """,
    "a loop over the items of an input mapping runs a layer per key": """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = Block()

            def forward(self, x, feats):
                for key, value in feats.items():
                    x = x + self.proj(value)
                return x
        """,
    "a data test skips a helper that runs a layer": """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = Block()

            def refine(self, h):
                return self.head(h)

            def forward(self, x):
                if x.sum() > 0:
                    x = self.refine(x)
                return x
        """,
    "a loop count read from a tensor": """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = Block()

            def forward(self, x, n):
                for _ in range(int(n.item())):
                    x = self.head(x)
                return x
        """,
    "forward hands an optional input to a method that gates a tower on it": """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.tower = Block()

            def fuse(self, x, ctx):
                if ctx is not None:
                    x = x + self.tower(ctx)
                return x

            def forward(self, x, ctx=None):
                return self.fuse(x, ctx)
        """,
    "a bound forward runs a tower only when the optional input was given": """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.tower = Block()

            def forward(self, x, ctx=None):
                fn = self.tower.forward
                if ctx is not None:
                    x = x + fn(ctx)
                return x
        """,
    "a loss helper handed the module runs only when the optional input was given": """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = Block()

            def forward(self, x, ctx=None):
                if ctx is not None:
                    x = x + aux_loss(self, ctx)
                return x
        """,
    "a loop over the items of an input mapping runs a helper per key": """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = Block()

            def encode(self, v):
                return self.proj(v)

            def forward(self, x, feats):
                for key, value in feats.items():
                    x = x + self.encode(value)
                return x
        """,
    "a tower picked with getattr runs only when the optional input was given": """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.tower = Block()

            def forward(self, x, ctx=None):
                if ctx is not None:
                    x = x + getattr(self, "tower")(ctx)
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
    "a cache the function fills is tested by key": """
        class Attention(nn.Module):
            def __init__(self, layer_id):
                super().__init__()
                self.k = Block()
                self.layer_id = layer_id

            def forward(self, x, cache):
                if self.layer_id not in cache:
                    cache[self.layer_id] = self.k(x)
                return x + cache[self.layer_id]
        """,
    "a mapping of loaders is tested by a fixed key": """
        def evaluate(model, data, args):
            if "val" in data and args.val_frequency:
                loader = data["val"].dataloader
                for batch in loader:
                    model(batch)
        """,
    "a data test picks one of two helpers that run the same layer": """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = Block()

            def refine(self, h):
                return self.head(h)

            def coarse(self, h):
                return self.head(h * 2)

            def forward(self, x):
                if x.sum() > 0:
                    x = self.refine(x)
                else:
                    x = self.coarse(x)
                return x
        """,
    "a loop count read from a buffer of the module": """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = Block()
                self.register_buffer("steps", torch.tensor(3))

            def forward(self, x):
                for _ in range(int(self.steps.item())):
                    x = self.head(x)
                return x
        """,
    "a method given a setting (not an optional input) gates a tower on it": """
        class Net(nn.Module):
            def __init__(self, extra=None):
                super().__init__()
                self.tower = Block()
                self.extra = extra

            def fuse(self, x, ctx):
                if ctx is not None:
                    x = x + self.tower(ctx)
                return x

            def forward(self, x, mask=None):
                return self.fuse(x, self.extra)
        """,
    "forward hands an optional input to a method that only adds it": """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.tower = Block()

            def fuse(self, x, ctx):
                if ctx is not None:
                    x = x + ctx
                return self.tower(x)

            def forward(self, x, ctx=None):
                return self.fuse(x, ctx)
        """,
    "a loop over the items of a cache the function fills": """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = Block()

            def forward(self, x, cache):
                for key, value in cache.items():
                    cache[key] = self.proj(value)
                return x
        """,
    "a parameter-free module picked with getattr runs only when the optional input was given": """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.act = nn.GELU()
                self.tower = Block()

            def forward(self, x, ctx=None):
                if ctx is not None:
                    x = x + getattr(self, "act")(ctx)
                return self.tower(x)
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


def test_a_random_mask_tested_with_any_around_a_helper_is_a_random_decision():
    body = """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = Block()

            def extra_loss(self, h):
                return self.head(h).mean()

            def forward(self, x):
                mask = torch.rand(x.shape[0]) < 0.5
                loss = x.mean()
                if mask.any():
                    loss = loss + self.extra_loss(x[mask])
                return loss
        """
    codes = [f.code for f in check_source("m.py", HEADER + textwrap.dedent(body)) if f.code.startswith("ZG2")]
    assert codes == ["ZG202"], codes
