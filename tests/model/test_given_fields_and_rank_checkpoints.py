"""What differs between ranks, read more finely in training scripts. A field of an object built with keyword
arguments holds the value it was given (`state = TrainState(step=0, loader_state=init_state(rank))` ... `while
state.step < steps:`: the step is no rank's own, only the loader state is; `Taint._given_field`). A checkpoint
loader handed the rank (`load_checkpoint(dir, step, device, rank=rank)`) reads this rank's file of a saved run whose
model and progress every rank reads alike (`taint._loads_shard`). The look-alikes are the hazards these must keep:
a field given the rank, and a loop walking a share the rank picks."""

from __future__ import annotations

import textwrap

from package_check import TINY_NET

from zgen.model import check_source

SCRIPT = """
import torch
import torch.distributed as dist
from torch import nn
from dataclasses import dataclass


@dataclass
class TrainState:
    step: int
    loader_state: dict


""" + TINY_NET + """

def train(args, loader):
    rank = dist.get_rank()
    model = Net()
    meta = load_checkpoint(args.dir, args.step, "cuda", rank=rank)
    state = TrainState(step=meta["step"], loader_state=init_state(rank))
    while state.step < args.steps:
        batch, state.loader_state = next(loader)
        model(batch).sum().backward()
        state.step += 1
"""


def found(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("train.py", textwrap.dedent(source)) if f.code.startswith("ZG2")]


def test_a_field_given_a_plain_value_and_a_checkpoint_read_by_rank_are_alike_on_every_rank():
    assert found(SCRIPT) == []


def test_a_field_given_the_rank_still_decides_by_rank():
    assert found(SCRIPT.replace("step=meta[\"step\"]", "step=rank")) == [("ZG201", 28)]


def test_progress_a_loader_of_another_kind_hands_back_for_this_rank_still_differs():
    assert found(SCRIPT.replace("load_checkpoint(", "rank_progress(")) == [("ZG201", 28)]
