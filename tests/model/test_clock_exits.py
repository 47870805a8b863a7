"""Loops that stop on this host's clock (a time limit, a time budget) while running a model (ZG204,
`taint.CLOCK`); against a clock that only gates logging, and values a collective made the same on every rank."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

HEAD = """
import time
from time import perf_counter
import torch
import torch.distributed as dist
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(512, 512)

    def forward(self, x):
        return self.body(x)

"""


def codes(code: str) -> list[str]:
    return sorted(f.code for f in check_source("m.py", HEAD + textwrap.dedent(code)) if f.code.startswith("ZG2"))


def test_a_training_loop_that_breaks_on_its_own_wall_clock():
    assert codes("""
        def train(model, loader, limit):
            start = time.time()
            for batch in loader:
                model(batch).mean().backward()
                if time.time() - start > limit:
                    break
    """) == ["ZG204"]


def test_a_while_loop_under_a_time_budget_in_a_method_of_a_trainer():
    assert codes("""
        class Trainer:
            def __init__(self, model, budget):
                self.model = model
                self.budget = budget

            def fit(self, loader):
                deadline = perf_counter() + self.budget
                while perf_counter() < deadline:
                    for batch in loader:
                        self.model(batch).mean().backward()
    """) == ["ZG204"]


def test_a_decoding_loop_returning_when_the_elapsed_time_is_spent():
    assert codes("""
        class Decoder(Net):
            def generate(self, x, seconds):
                t0 = time.monotonic()
                for _ in range(64):
                    elapsed = time.monotonic() - t0
                    if elapsed > seconds:
                        return x
                    x = self.body(x)
                return x
    """) == ["ZG204"]


def test_the_clock_reduced_across_ranks_or_only_logged_is_no_exit():
    assert codes("""
        def train(model, loader, limit):
            start = time.time()
            for batch in loader:
                model(batch).mean().backward()
                elapsed = torch.tensor(time.time() - start)
                dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
                if elapsed.item() > limit:
                    break

        def train_logged(model, loader, limit):
            start = time.time()
            for batch in loader:
                model(batch).mean().backward()
                if time.time() - start > limit:
                    print("slow epoch")
    """) == []


def test_a_loss_all_reduced_before_the_exit_test_is_the_same_on_every_rank():
    assert codes("""
        def train(model, loader):
            for batch in loader:
                loss = model(batch).mean()
                dist.all_reduce(loss)
                if loss.item() < 1e-3:
                    break
    """) == []
    # the test before the reduction is still this rank's own
    assert codes("""
        def train(model, loader):
            for batch in loader:
                loss = model(batch).mean()
                if loss.item() < 1e-3:
                    break
                dist.all_reduce(loss)
    """) == ["ZG204"]
