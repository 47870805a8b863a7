"""Which values are the rank: one list (`known.RANK_CALLS`, `RANK_NAMES`, `RANK_ENV`) read by the taint, the
ZG201 pre-filter and the attributes `__init__` sets from the rank. Each case below was missed by one of the
three when they were written separately."""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

HEAD = """
import os
import torch.distributed as dist
from torch import nn
"""

# `__init__` stores a rank test under a name that is not itself a rank word; forward gates a layer on it.
STORED = """
class Net(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.probe = nn.Linear(512, 512)
        self.head = nn.Linear(512, 512)
        self.{name} = {value}

    def forward(self, x):
        if self.{name}:
            x = self.probe(x)
        return self.head(x)
"""


def codes(source: str) -> list[str]:
    return [f.code for f in check_source("m.py", HEAD + textwrap.dedent(source))]


@pytest.mark.parametrize(
    "name, value",
    [
        ("first", "is_master(args)"),  # a training loop's own "am I rank 0?" helper
        ("node", 'int(os.environ["NODE_RANK"]) == 0'),  # the node's rank from the launcher
        ("leader", 'int(os.environ.get("LOCAL_RANK", 0)) == 0'),
        ("lead", "args.world_rank == 0"),
    ],
)
def test_an_attribute_set_from_any_rank_source_gates_like_the_rank(name, value):
    assert codes(STORED.format(name=name, value=value)) == ["ZG201"]


def test_an_attribute_set_from_a_config_value_does_not():
    assert codes(STORED.format(name="first", value="args.use_probe")) == []


# Lightning's trainer: `is_global_zero` is a rank name, also when it is all a function mentions of the rank.
LIGHTNING = """
def validate(trainer, model, batch):
    if trainer.is_global_zero:
        model(batch)
"""


def test_a_rank_name_alone_passes_the_pre_filter():
    assert codes(LIGHTNING) == ["ZG201"]


# Names that say by their shape that they hold this process's rank, beyond the lists: a trainer handed its rank
# under its own name gates validation (which runs the model) on it.
TRAINER = """
class Trainer:
    def __init__(self, model, {name}):
        self.model = model
        self.{name} = {name}

    def train(self, batches, valid):
        for batch in batches:
            self.model(batch)
            if self.{name} {test}:
                self.validate(valid)

    def validate(self, valid):
        for batch in valid:
            self.model(batch)
"""


@pytest.mark.parametrize(
    "name, test",
    [("gpu_rank", "<= 0"), ("dp_rank", "== 0"), ("data_parallel_rank", "== 0"), ("worker_rank", "== 0"),
     ("is_master_proc", ""), ("master_process", ""), ("is_chief", "")],
)
def test_a_name_shaped_like_a_process_rank_gates_like_the_rank(name, test):
    assert codes(TRAINER.format(name=name, test=test)) == ["ZG201"]


@pytest.mark.parametrize(
    "name, test",
    [("lora_rank", "> 0"), ("low_rank", "> 0"), ("max_rank", "> 4"), ("num_ranks", "> 1"), ("rank_dropout", "> 0")],
)
def test_a_matrix_rank_or_a_count_of_ranks_does_not(name, test):
    assert codes(TRAINER.format(name=name, test=test)) == []


GETTERS = """
def step(model, batch):
    {target} = {call}()
    if {test}:
        model(batch)
"""


def test_a_getter_of_a_group_rank_is_the_rank():
    assert codes(GETTERS.format(target="r", call="mpu.get_data_parallel_rank", test="r == 0")) == ["ZG201"]


def test_a_getter_of_the_world_size_and_rank_pair_is_not_taken_for_the_rank():
    source = GETTERS.format(target="world_size, rank", call="utils.get_world_size_and_rank", test="world_size > 1")
    assert codes(source) == []
