"""A helper that `__init__` runs and forward runs again (a sinusoidal table remade for a longer sequence), and a
trainer's clipping under a test that keeps it off the DeepSpeed path: told where forward calls the helper, and not
at all under the test."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found

TABLE = '''
import torch
from torch import nn


class SinusoidalPositions(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.d = d
        self.make_weights(n, d)

    def make_weights(self, n, d):
        table = torch.randn(n, d)
        self.weights = nn.Parameter(table)
        self.weights.requires_grad = False

    def forward(self, ids):
        seq_len = ids.size(1)
        if seq_len > self.weights.size(0):
            self.make_weights(seq_len, self.d)
        return self.weights[:seq_len]
'''


def test_a_parameter_remade_by_a_helper_init_runs_is_told_at_the_forward_call(tmp_path: Path) -> None:
    path = tmp_path / "positions.py"
    path.write_text(TABLE)
    assert found(path, "ZG106") == [("ZG106", 20)]


TRAINER = '''
import torch


class Trainer:
    def __init__(self, model, optimizer, args, deepspeed=None):
        self.model = model
        self.optimizer = optimizer
        self.args = args
        self.deepspeed = deepspeed

    def step(self, batch):
        loss = self.model(batch)
        loss.backward()
        if self.args.max_grad_norm > 0 and not self.deepspeed:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.args.max_grad_norm)
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
'''


def test_clipping_off_the_deepspeed_path_is_guarded(tmp_path: Path) -> None:
    path = tmp_path / "trainer.py"
    path.write_text(TRAINER)
    assert found(path, "ZG107") == [("ZG107", 17)]
