"""A `return` or `continue` taken on this rank's own loss values before `loss.backward()`: under ZeRO-3 the backward
gathers every parameter again and reduce-scatters the gradients with all ranks, so it is a collective like a
submodule call (`divergence._backward_sites`), whoever computed the loss (a trainer handed in). A helper returning a
test of the values it was handed (`math.isfinite(x.item())`, of this file or another) says this rank's own thing
(`taint.value_test_function`). A guard after the backward, an all-reduced flag, a setting, a counter, a `raise`, or
an `is None` test is not flagged."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found, found_in_package, write_package

HANDED = """
import torch

class Stepper:
    def __init__(self, optimizer):
        self.optimizer = optimizer

    def step(self, trainer, batch):
        losses = trainer.compute_loss(batch)
        loss = sum(v for k, v in losses.items() if k.startswith("loss"))
        if not torch.isfinite(loss.detach()).all():
            self.optimizer.zero_grad(set_to_none=True)
            return losses
        self.scaler.scale(loss).backward()
        self.optimizer.step()
        return losses
"""

SKIPPED = """
import torch

def fit(model, loader, optimizer):
    for batch in loader:
        out = model(batch)
        loss = out.mean()
        if torch.isnan(loss):
            continue
        loss.backward()
        optimizer.step()
"""

CHECKS = """
import math

def loss_ok(loss):
    return math.isfinite(loss.item())
"""

RUNNER = """
from .checks import loss_ok

class Runner:
    def __init__(self, model, opt):
        self.model = model
        self.opt = opt

    def train_batch(self, x, y):
        loss = ((self.model(x) - y) ** 2).mean()
        if not loss_ok(loss):
            return None
        loss.backward()
        self.opt.step()
        return loss
"""

AGREED = """
import torch
import torch.distributed as dist

def any_nonfinite(x):
    flag = (~torch.isfinite(x)).any().float()
    dist.all_reduce(flag)
    return flag.item() > 0

def train_step(model, optimizer, batch, clip):
    loss = model(batch)
    if any_nonfinite(loss):
        return None
    bad = (~torch.isfinite(loss)).float()
    dist.all_reduce(bad)
    if bad.item() > 0:
        return None
    if not math.isfinite(clip):
        return None
    if loss is None or not loss.requires_grad:
        return None
    if not torch.isfinite(bad).all():
        raise RuntimeError("non-finite loss")
    loss.backward()
    if not torch.isfinite(loss).all():
        optimizer.zero_grad()
        return None
    optimizer.step()
"""

COUNTED = """
def fit(model, loader, optimizer, accumulation, warmup):
    for i, batch in enumerate(loader):
        loss = model(batch) / accumulation
        if i < warmup:
            continue
        loss.backward()
        if (i + 1) % accumulation != 0:
            continue
        optimizer.step()
"""


def _write(tmp_path: Path, source: str) -> Path:
    return write_package(tmp_path, {"m.py": source}) / "m.py"


def test_a_non_finite_loss_of_a_handed_trainer_returns_before_backward(tmp_path: Path) -> None:
    assert found(_write(tmp_path, HANDED), "ZG2") == [("ZG204", 11)]


def test_a_nan_loss_continues_past_backward(tmp_path: Path) -> None:
    assert found(_write(tmp_path, SKIPPED), "ZG2") == [("ZG203", 8)]


def test_a_value_test_of_another_file_decides_the_return(tmp_path: Path) -> None:
    files = {"checks.py": CHECKS, "runner.py": RUNNER}
    assert found_in_package(tmp_path, files, "runner.py") == [("ZG204", 11)]


def test_agreed_flags_settings_raises_and_a_guard_after_backward_are_clean(tmp_path: Path) -> None:
    assert found(_write(tmp_path, "import math\n" + AGREED), "ZG2") == []


def test_a_raise_on_this_ranks_own_non_finite_loss_stops_that_rank_alone(tmp_path: Path) -> None:
    # (a raise on the all-reduced flag above is every rank's; one on the rank's own loss is its alone: the others
    # wait for it in the next collective unless the launcher tears the job down)
    source = "import math\n" + AGREED.replace("torch.isfinite(bad).all()", "torch.isfinite(loss).all()")
    assert found(_write(tmp_path, source), "ZG2") == [("ZG204", 23)]


def test_counters_before_and_after_backward_are_clean(tmp_path: Path) -> None:
    assert found(_write(tmp_path, COUNTED), "ZG2") == []


PROGRESS = """
import sys, os
from tqdm import tqdm
from torch.distributed import get_rank

def train(trainer, loader, total):
    out = sys.stderr if get_rank() == 0 else open(os.devnull, "w")
    pbar = tqdm(total=total, file=out)
    while pbar.n < pbar.total:
        for batch in loader:
            if pbar.n >= pbar.total:
                break
            loss = trainer.compute_loss(batch)
            loss.backward()
            pbar.update(1)
"""


def test_a_step_count_of_a_progress_bar_shown_on_the_main_rank_is_clean(tmp_path: Path) -> None:
    # (the bar's count is the same on every rank; only its display follows the rank)
    assert found(_write(tmp_path, PROGRESS), "ZG2") == []


def test_the_nan_idiom_x_unequal_to_itself_is_a_non_finite_test(tmp_path: Path) -> None:
    source = """
import torch


def train_epoch(model, loader, optimizer):
    epoch_loss = 0.0
    for batch in loader:
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()
        epoch_loss += loss.item()
        if epoch_loss != epoch_loss:
            raise ArithmeticError("NaN detected in train loss")
        if optimizer != optimizer.param_groups:
            raise ValueError("not a NaN test")
"""
    assert found(_write(tmp_path, source), "ZG2") == [("ZG204", 12)]
