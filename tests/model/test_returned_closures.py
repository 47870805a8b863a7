"""A function a module-level factory defines and returns (score_sde's `optimization_manager()` returning
`optimize_fn`) runs later as a function of its own, handed the model's parameters by the training step: its clip of
their gradients is read as a module-level function's is."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

LOSSES = """
import numpy as np
import torch


def optimization_manager(config):
    def optimize_fn(optimizer, params, step, lr=config.lr, warmup=config.warmup, grad_clip=config.grad_clip):
        if warmup > 0:
            for g in optimizer.param_groups:
                g["lr"] = lr * np.minimum(step / warmup, 1.0)
        if grad_clip >= 0:
            torch.nn.utils.clip_grad_norm_(params, max_norm=grad_clip)
        optimizer.step()

    return optimize_fn
"""


def found(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("losses.py", textwrap.dedent(source))]


def test_a_returned_closure_clipping_the_parameters_it_is_handed_clips_partitioned_gradients():
    assert ("ZG107", 12) in found(LOSSES)


def test_a_returned_closure_stepping_the_optimizer_alone_touches_no_gradient():
    source = LOSSES.replace("            torch.nn.utils.clip_grad_norm_(params, max_norm=grad_clip)\n", "            pass\n")
    assert [code for code, _ in found(source) if code.startswith("ZG1")] == []
