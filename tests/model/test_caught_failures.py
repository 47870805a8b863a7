"""A failure a rank raises on its own, caught, and the rank carries on (ZG204, issue 20).

Out of memory or a kernel error happens on one rank's batch, not on every rank's. A handler that swallows it
(`return None`, `continue`, a fallback pass in halves) lets that rank stop partway through a pass its peers
finish, or run another: the peers wait in an all-gather it never joins. Safe look-alikes: a handler that always
raises again or ends the process, a handler of an API probe (`TypeError`, `ImportError`) which is the same on every
rank, and a handler around code that runs no model.
"""

from __future__ import annotations

import pytest

from zgen.model import check_source

TRAINER = """
import sys

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return self.fc(x)


class Trainer:
    def __init__(self, model: Net, optimizer):
        self.model = model
        self.optimizer = optimizer

    def train_step(self, batch):
{body}
"""

FUNCTION = """
import torch


def fit(model, loader, optimizer):
    for batch in loader:
{body}
"""

CAUGHT = {
    "out of memory skipped by return": """
try:
    loss = self.model(batch).mean()
    loss.backward()
except RuntimeError as e:
    if "out of memory" in str(e):
        torch.cuda.empty_cache()
        return None
    raise
self.optimizer.step()
return loss
""",
    "a fallback pass in halves": """
try:
    out = self.model(batch)
except torch.cuda.OutOfMemoryError:
    half = batch.shape[0] // 2
    out = torch.cat([self.model(batch[:half]), self.model(batch[half:])])
return out
""",
    "any exception swallowed with a bare except": """
try:
    out = self.model(batch)
except:
    out = None
return out
""",
    "a tuple of failures, logged and dropped": """
try:
    self.model(batch).sum().backward()
except (ValueError, RuntimeError) as e:
    print("bad batch", e)
self.optimizer.step()
""",
}

NOT_CAUGHT = {
    "a handler that always raises again": """
try:
    loss = self.model(batch).mean()
except RuntimeError as e:
    print("failed", e)
    raise
return loss
""",
    "a handler whose every branch raises": """
try:
    loss = self.model(batch).mean()
except RuntimeError as e:
    if "out of memory" in str(e):
        raise MemoryError("lower the micro batch") from e
    else:
        raise
return loss
""",
    "a handler that ends the process": """
try:
    loss = self.model(batch).mean()
except Exception:
    sys.exit(1)
return loss
""",
    "an API probe, the same on every rank": """
try:
    out = self.model(batch, return_dict=True)
except TypeError:
    out = self.model(batch)
return out
""",
    "a swallowed failure around code that runs no model": """
try:
    stats = torch.load("stats.pt")
except Exception:
    stats = None
return self.model(batch), stats
""",
}


def _zg204(source: str) -> list:
    return [f for f in check_source("m.py", source) if f.code == "ZG204"]


def _indent(body: str, n: int) -> str:
    return "\n".join(" " * n + line if line else line for line in body.strip("\n").splitlines())


@pytest.mark.parametrize("body", CAUGHT.values(), ids=CAUGHT.keys())
def test_failure_caught_around_a_model_call_found(body: str) -> None:
    found = _zg204(TRAINER.format(body=_indent(body, 8)))
    assert len(found) == 1, found
    assert "the failure is caught" in found[0].message


@pytest.mark.parametrize("body", NOT_CAUGHT.values(), ids=NOT_CAUGHT.keys())
def test_failure_not_swallowed_or_not_a_model_call_clean(body: str) -> None:
    assert _zg204(TRAINER.format(body=_indent(body, 8))) == []


def test_batch_skipped_with_continue_in_a_training_function_found() -> None:
    body = """
try:
    model(batch).mean().backward()
    optimizer.step()
except RuntimeError:
    optimizer.zero_grad()
    continue
"""
    found = _zg204(FUNCTION.format(body=_indent(body, 8)))
    assert [f.line for f in found] == [10], found


def test_skip_inside_a_module_forward_found() -> None:
    source = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.big = nn.Linear(8, 8)
        self.small = nn.Linear(8, 8)

    def forward(self, x):
        try:
            return self.big(x)
        except torch.OutOfMemoryError:
            return self.small(x)
"""
    found = _zg204(source)
    assert [f.line for f in found] == [15], found
