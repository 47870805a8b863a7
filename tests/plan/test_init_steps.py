"""Initialisation on zgen's runtime: the constructor's own writes, `init_fn`, and a model's init methods for
modules built on meta by their author (no third-party packages)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

import zgen.runtime as zr
import zgen.runtime.meta_build as meta_build
from zgen.config.resolved import ZeroSpec
from zgen.errors import ZgenError
from zgen.plan.planner import build_plan
from zgen.plan.trace import build_meta_model, load_callable, parse_target, trace_model
from zgen.runtime.own_init import init_steps

REPO = Path(__file__).resolve().parents[2]
CONFIG = {"train_batch_size": 1, "train_micro_batch_size_per_gpu": 1,
          "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}},
          "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0}}


def _vit():
    t = parse_target("examples/models/patch_vit.py:build_model", "--model")
    return load_callable(t, REPO), t


def test_steps_run_children_first_with_each_modules_own_methods():
    factory, t = _vit()
    steps = [(name, what) for name, _, what, _ in init_steps(build_meta_model(factory, t))]
    assert steps[-1] == ("", "init_weights")  # the root's re-initialisation comes last, as in model.apply
    assert ("blocks.0.attn", "_reset_parameters") in steps  # nn.MultiheadAttention's private one
    assert steps.index(("blocks.0.attn.out_proj", "reset_parameters")) < steps.index(("blocks.0.attn", "_reset_parameters"))


def test_a_parents_init_lands_in_every_childs_unit(monkeypatch):
    """`PatchViT.init_weights` rewrites every block's Linear after their own reset: one unit per module."""
    monkeypatch.setattr(meta_build, "KEEP_NUMEL", 0)
    factory, t = _vit()
    model = build_meta_model(factory, t)
    inputs = parse_target("examples/models/patch_vit.py:make_inputs", "--inputs")
    loss = parse_target("examples/models/patch_vit.py:cross_entropy", "--loss")
    trace = trace_model(model, root=REPO, batch_size=2, seq_len=1, inputs=(load_callable(inputs, REPO), inputs),
                        loss=(load_callable(loss, REPO), loss))
    modules = [n for n, m in model.named_modules() if n and any(True for _ in m.parameters(recurse=False))]
    plan = build_plan(model, trace, ZeroSpec(stage=3, param_persistence_threshold=0), patterns=modules)
    assert len(plan.units) > 10
    torch.manual_seed(7)
    reference = factory()
    torch.manual_seed(7)
    got = zr.initialize(factory, CONFIG, plan=plan, device="cpu").full_state_dict()
    for name, p in reference.named_parameters():
        assert torch.equal(got[name], p.detach()), name
    assert float(got["blocks.2.mlp.0.weight"].std()) < 0.03  # trunc_normal(std=0.02), not Linear's default


class _Raises(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.empty(3))

    def reset_parameters(self) -> None:
        raise ValueError("needs a checkpoint file")


class _Untouched(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.big = nn.Parameter(torch.empty(1100, 1000))  # above KEEP_NUMEL and no method sets it


def test_an_init_step_that_raises_is_named():
    """A model its author built on meta gets its own init methods; one that raises is named."""
    with torch.device("meta"):
        model = _Raises()
    with pytest.raises(ZgenError, match=r"initialising module `<root>` with `reset_parameters` raised ValueError: "
                                        r"needs a checkpoint file"):
        zr.initialize(model, CONFIG, device="cpu")


def test_a_parameter_nothing_initialises_is_named():
    with pytest.raises(ZgenError, match=r"parameter `big` is uninitialised memory: it is made with `torch.empty` "
                                        r"\(or on the meta device\) and the constructor never writes it"):
        zr.initialize(_Untouched, CONFIG, device="cpu")


class _Tokens(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.cls = nn.Parameter(torch.randn(1, 8) * 0.02)  # drawn in __init__, no method redraws it
        self.table = nn.Parameter(torch.randn(1100, 1000) * 0.02)  # the same, above KEEP_NUMEL


def test_values_only_the_constructor_draws_are_the_plain_builds():
    torch.manual_seed(3)
    reference = _Tokens()
    torch.manual_seed(3)
    got = zr.initialize(_Tokens, CONFIG, device="cpu").full_state_dict()
    for name, p in reference.named_parameters():
        assert torch.equal(got[name], p.detach()), name


def test_init_fn_runs_after_the_constructor_as_apply_would():
    def init_fn(m):
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, std=0.5)

    torch.manual_seed(4)
    reference = _Tokens()
    reference.apply(init_fn)
    torch.manual_seed(4)
    got = zr.initialize(_Tokens, CONFIG, device="cpu", init_fn=init_fn).full_state_dict()
    for name, p in reference.named_parameters():
        assert torch.equal(got[name], p.detach()), name
