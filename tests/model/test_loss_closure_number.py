"""A loss closure whose result is read as a number, `float(closure())`, runs the model like `closure().item()`.

An optimiser's `step(closure)` (an L-BFGS, a line search) evaluates the model through the closure and compares the
losses as floats; a loop that stops when this rank's loss stops changing runs the closure's forward a different number
of times on each rank. A callable whose result is only formatted or counted stays a hook.
"""

from __future__ import annotations

from package_check import found, write_package

OPTIMISER = """
import torch
from torch.optim import Optimizer


class SmallLBFGS(Optimizer):
    def __init__(self, params, lr=1.0, max_iter=20, tolerance_change=1e-9):
        super().__init__(params, dict(lr=lr, max_iter=max_iter, tolerance_change=tolerance_change))

    @torch.no_grad()
    def step(self, closure):
        group = self.param_groups[0]
        closure = torch.enable_grad()(closure)
        orig_loss = closure()
        prev_loss = float(orig_loss)
        n_iter = 0
        while n_iter < group["max_iter"]:
            n_iter += 1
            loss = float(closure())
            if abs(loss - prev_loss) < group["tolerance_change"]:
                break
            prev_loss = loss
        return orig_loss
"""

FIXED = """
import torch
from torch.optim import Optimizer


class FixedSteps(Optimizer):
    def __init__(self, params, max_iter=20):
        super().__init__(params, dict(max_iter=max_iter))

    @torch.no_grad()
    def step(self, closure):
        group = self.param_groups[0]
        loss = float(closure())
        n_iter = 0
        while n_iter < group["max_iter"]:
            n_iter += 1
            loss = float(closure())
            if n_iter == group["max_iter"]:
                break
        return loss


def poll(report, n):
    count = 0
    done = False
    while not done:
        count += 1
        report(count)
        done = count >= n
    return count
"""


def test_loop_stopping_on_a_float_loss_of_the_closure(tmp_path):
    path = write_package(tmp_path, {"opt.py": OPTIMISER}) / "opt.py"
    assert ("ZG204", 20) in found(path, "ZG2")


def test_fixed_count_and_a_progress_callback_are_clean(tmp_path):
    path = write_package(tmp_path, {"opt.py": FIXED}) / "opt.py"
    assert found(path, "ZG2") == []
