"""Host time the engine spends per unit per step putting weights in place for recomputation in backward.

CPU, world size 1, a 16-unit toy model whose compute is negligible, so the step time is the engine's own
Python work. Prints the best-of-3 step time with the backward installs and with them switched off.

    python bench/backward_overhead.py
"""

from __future__ import annotations

import time

import torch
from torch import nn

import zgen.runtime as zr
from zgen.runtime.engine import Engine

UNITS, STEPS = 16, 60
CONFIG = {"train_batch_size": 2, "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}},
          "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0}}


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm, self.a, self.b, self.c = nn.LayerNorm(8), nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.c(self.b(self.a(self.norm(x))))


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block() for _ in range(UNITS))
        self.head = nn.Linear(8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return self.head(x).pow(2).mean()


def step_ms() -> float:
    engine, x = zr.initialize(Net(), CONFIG), torch.randn(2, 8)
    for _ in range(5):
        engine.backward(engine(x))
        engine.step()
    t0 = time.perf_counter()
    for _ in range(STEPS):
        engine.backward(engine(x))
        engine.step()
    return (time.perf_counter() - t0) / STEPS * 1e3


def main() -> None:
    torch.set_num_threads(1)
    with_installs = min(step_ms() for _ in range(3))
    original = Engine._install_backward
    Engine._install_backward = lambda self, u: None
    try:
        without = min(step_ms() for _ in range(3))
    finally:
        Engine._install_backward = original
    print(f"{UNITS} units: {with_installs:.2f} ms per step with backward installs, {without:.2f} ms without "
          f"({(with_installs - without) / UNITS * 1000:.0f} us per unit)")


if __name__ == "__main__":
    main()
