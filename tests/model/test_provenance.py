"""A built model followed by what it is (`analysis/provenance.py`), not by how the path to it is spelt: the
same hazard through a constructor's argument kept on `self`, a property, a generator method, `zip` of two
walks, a list holding the model, a helper of the file; next to look-alikes that must stay clean."""

from __future__ import annotations

import textwrap

from zgen.model import check_source
from zgen.model.analysis.provenance import Items, Model, Param, Tup, Union, item_of, join

HEAD = """
from copy import deepcopy

import deepspeed
import torch
from torch import nn
"""


def _found(body: str) -> list[tuple[str, int]]:
    """(code, line relative to `body`) of the ZG1 findings."""
    start = len(textwrap.dedent(HEAD).splitlines())
    src = textwrap.dedent(HEAD) + textwrap.dedent(body)
    return sorted((f.code, f.line - start) for f in check_source("m.py", src, None) if f.code.startswith("ZG1"))


def test_the_lattice_joins_and_iterates() -> None:
    model = Model("m")
    pairs = Items(Tup((None, Param("m.named_parameters()", walked=True))))
    assert join(None, model) == model and join(model, model) == model
    assert isinstance(join(model, Items(model)), Union)
    assert item_of(pairs) == Tup((None, Param("m.named_parameters()", walked=True)))
    assert item_of(join(model, Items(model))) == model  # a model or a list of it: walking either gives the model


def test_an_averager_kept_model_through_a_property_a_generator_and_zip() -> None:
    assert _found("""
class Averager(nn.Module):
    def __init__(self, model, keep_in_tree=True):
        super().__init__()
        self.keep_in_tree = keep_in_tree
        self.online = model if keep_in_tree else [model]
        self.shadow = None

    def init_shadow(self):
        self.shadow = deepcopy(self.model)

    @property
    def model(self):
        return self.online if self.keep_in_tree else self.online[0]

    def pairs(self, m):
        for name, p in m.named_parameters():
            yield name, p

    def step(self):
        if self.shadow is None:
            self.init_shadow()
        for (_, s), (_, p) in zip(self.pairs(self.shadow), self.pairs(self.model)):
            s.data.lerp_(p.data, 0.01)

    def forward(self, x):
        return self.shadow(x)
""") == [("ZG101", 24), ("ZG105", 10), ("ZG109", 24)]


def test_a_wrapper_sizing_and_broadcasting_what_its_constructor_was_handed() -> None:
    assert _found("""
class MetaWrapper(nn.Module):
    def __init__(self, module: nn.Module, lr=0.1):
        super().__init__()
        self.module = module
        self.lrs = [torch.ones_like(p) * lr for p in module.parameters()]
        for p in self.module.parameters():
            torch.distributed.broadcast(p.data, 0)

    def forward(self, x):
        return self.module(x)
""") == [("ZG102", 6), ("ZG109", 8)]


def test_a_helper_of_the_file_and_a_list_holding_the_model() -> None:
    assert _found("""
def count(m):
    return sum(p.numel() for p in m.parameters())


class Trainer:
    def __init__(self, model):
        self.models = [model]

    def report(self):
        total = count(self.models[0])
        kept = []
        for p in self.models[0].parameters():
            kept.append(p)
        for i, p in enumerate(kept):
            p.data.clamp_(-1, 1)
""") == [("ZG101", 16), ("ZG102", 3)]


def test_gathered_metadata_and_plain_tensors_stay_clean() -> None:
    assert _found("""
class Averager:
    def __init__(self, model):
        self.online = model
        self.buffers = [torch.zeros(4)]

    def params(self):
        for name, p in self.online.named_parameters():
            yield name, p

    def step(self):
        for _, p in self.params():
            p.detach_()
            if torch.is_floating_point(p) and p.requires_grad:
                with deepspeed.zero.GatheredParameters([p], modifier_rank=0):
                    p.data.mul_(0.5)
        for b in self.buffers:
            b.data.mul_(0.5)
""") == []


def test_a_module_built_in_the_same_scope_and_a_factory_handed_in_stay_clean() -> None:
    assert _found("""
class Head(nn.Module):
    def __init__(self, embed: nn.Module, make):
        super().__init__()
        self.proj = nn.Linear(embed.embedding_dim, 8)
        self.tied = nn.Parameter(embed.weight)
        replacement = make(embed.num_embeddings, embed.embedding_dim)
        replacement.weight.data.zero_()

    def forward(self, x):
        return self.proj(x)
""") == []


def test_a_property_of_the_model_s_class_and_an_average_updated_later() -> None:
    assert _found("""
from ema_pytorch import EMA


class Base(nn.Module):
    pass


class Generator(Base):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4096, 4096)

    @property
    def total_params(self):
        return sum(p.numel() for p in self.parameters())

    def forward(self, x):
        return self.fc(x)


class Trainer:
    def __init__(self, generator: Base):
        self.G = generator
        print(generator.total_params)
        self.ema = EMA(self.G)

    def step(self):
        self.ema.update()
""") == [("ZG101", 29), ("ZG102", 16), ("ZG102", 25), ("ZG105", 26)]


def test_a_property_reading_sizes_only_and_an_average_of_a_local_stay_clean() -> None:
    assert _found("""
from ema_pytorch import EMA


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4096, 4096)

    @property
    def width(self):
        return 4096

    def forward(self, x):
        return self.fc(x)


class Trainer:
    def __init__(self, generator: Generator, stats):
        self.G = generator
        print(generator.width)
        self.stats = EMA(stats)

    def step(self):
        self.stats.update()
""") == []
