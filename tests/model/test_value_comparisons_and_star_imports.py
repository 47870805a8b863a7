"""A whole-tensor comparison of what a model computed (`torch.allclose(grad, zeros)`, `t.allclose(...)` for a module
imported under any name, `grad.allclose(z)`) is a test of this rank's values like `torch.isnan(loss)`
(`taint._value_predicate`): a `return` on it skips the model calls after it (TRPO's zero-gradient exit). A name a
file takes from a star import (`from .a2c import *` ... `class TRPO(A2C)`) is the class the starred module defines
or imports (`ModelIndex._starred`), so the base's helpers that run the model are read. Look-alikes: a comparison of
the object's own tensors, one that raises, an assert."""

from __future__ import annotations

from tests.model.package_check import found_in_package

BASE = """
    import torch as t


    class Base:
        def __init__(self, actor, critic):
            self.actor = actor
            self.critic = critic

        def _eval_act(self, state):
            return self.actor(state)

        def _criticize(self, state):
            return self.critic(state)
"""

ALGO = """
    from .base import *


    class Algo(Base):
        @staticmethod
        def flat_grad(loss, params):
            return t.cat([g.reshape(-1) for g in t.autograd.grad(loss, params)])

        def update(self, state):
            loss = self._eval_act(state).mean()
            grad = self.flat_grad(loss, list(self.actor.parameters()))
            if t.allclose(grad, t.zeros_like(grad), atol=1e-15):
                return 0
            return self._criticize(state).mean()
"""

SAFE = """
    import torch
    from torch import nn


    class Checker:
        def __init__(self, model: nn.Module):
            self.model = model
            self.target = torch.zeros(3)

        def cached(self, x):
            if torch.allclose(self.target, torch.zeros_like(self.target)):
                return None
            return self.model(x)

        def verified(self, x, ref):
            out = self.model(x)
            if not torch.allclose(out, ref):
                raise ValueError("mismatch")
            assert out.allclose(ref)
            return self.model(out)
"""


def test_a_return_on_a_zero_gradient_of_the_model_skips_the_critic_through_a_star_imported_base(tmp_path):
    assert found_in_package(tmp_path, {"base.py": BASE, "algo.py": ALGO}, "algo.py", prefix="ZG2") == [("ZG204", 13)]


def test_comparisons_of_own_tensors_raises_and_asserts_are_no_exit(tmp_path):
    assert found_in_package(tmp_path, {"safe.py": SAFE}, "safe.py", prefix="ZG2") == []


RANKED = """
    from .base import *


    class Evaluator(Base):
        def evaluate(self, state, rank):
            if rank == 0:
                return self._eval_act(state)
            return None
"""


def test_a_helper_of_a_star_imported_base_runs_the_model_under_a_rank_test(tmp_path):
    files = {"base.py": BASE, "evaluate.py": RANKED}
    assert found_in_package(tmp_path, files, "evaluate.py", prefix="ZG2") == [("ZG201", 7)]
