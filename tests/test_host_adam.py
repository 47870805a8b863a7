"""The one-pass host Adam(W) of optimizer offload (`zgen.runtime.host_adam`) against torch's fused AdamW.

The arithmetic is checked eagerly (the same function inductor compiles); compiling it takes 10-40 s on two
cores, so that test runs only with `ZGEN_TEST_COMPILE=1` (the GPU benchmarks run the compiled kernel).
"""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest
import torch

from zgen.errors import ZgenError
from zgen.runtime.config import RuntimeConfig
from zgen.runtime.host_adam import HostAdam, _adam_cast
from zgen.runtime.optim import TorchAdamW


def _config(kind: str) -> RuntimeConfig:
    """AdamW, or Adam with L2 weight decay (DeepSpeed's "Adam" with `adam_w_mode` false)."""
    params = {"lr": 3e-3, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.1}
    if kind == "Adam":
        params["adam_w_mode"] = False
    return RuntimeConfig.load({
        "train_batch_size": 1,
        "optimizer": {"type": kind, "params": params},
        "bf16": {"enabled": True},
        "zero_optimization": {"stage": 3},
    }, 1)


def _unit(n: int, seed: int) -> SimpleNamespace:
    g = torch.Generator().manual_seed(seed)
    return SimpleNamespace(label="u", master=torch.randn(n, generator=g))


def _close(a: torch.Tensor, ref: torch.Tensor) -> bool:
    """Equal to fp32 rounding: within a few ulps of the largest value (the two may contract a multiply-add)."""
    return float((a - ref).abs().max()) <= 1e-6 * float(ref.abs().max())


def _run(kind: str, kernel, steps: int = 4, n: int = 1000):
    """(torch's master, state) and (the fused path's master, state, bf16 output) after `steps` updates."""
    ref, mine = _unit(n, 0), _unit(n, 0)
    torch_path = TorchAdamW([ref], _config(kind))
    fused = HostAdam(TorchAdamW([mine], _config(kind)), kernel)
    out = torch.empty(n, dtype=torch.bfloat16)
    gen = torch.Generator().manual_seed(1)
    for step in range(steps):
        grad = torch.randn(n, generator=gen) * 4
        scale = torch.tensor(2.0 + step)
        lr = 3e-3 / (step + 1)  # a schedule: the scalars change every step
        torch_path.step_unit(ref, grad.clone(), scale, lr)
        fused.step_unit(mine, grad.clone(), scale, lr, out)
    return (ref.master, torch_path.state(ref)), (mine.master, fused.inner.state(mine), out)


def torch_path_is(kind: str) -> bool:
    """The reference really is torch's AdamW for "AdamW" and torch's Adam (L2) for "Adam"."""
    cls = type(TorchAdamW([_unit(8, 0)], _config(kind)).torch)
    return cls is (torch.optim.AdamW if kind == "AdamW" else torch.optim.Adam)


@pytest.mark.parametrize("kind", ["AdamW", "Adam"])
def test_matches_torch_fused_adamw_and_writes_the_cast(kind):
    (p_ref, st_ref), (p, st, out) = _run(kind, _adam_cast)
    assert torch_path_is(kind)
    assert _close(p, p_ref)
    assert _close(st["exp_avg"], st_ref["exp_avg"])
    assert _close(st["exp_avg_sq"], st_ref["exp_avg_sq"])
    assert float(st["step"]) == float(st_ref["step"]) == 4.0
    assert torch.equal(out, p.to(torch.bfloat16))  # the compute copy is the updated master, cast


def test_adam_and_adamw_differ():
    """The weight decay really is decoupled for AdamW and in the gradient for Adam (a wrong flag would pass both)."""
    (_, _), (p_w, _, _) = _run("AdamW", _adam_cast)
    (_, _), (p_a, _, _) = _run("Adam", _adam_cast)
    assert not _close(p_w, p_a)


def test_state_moves_to_the_two_pass_path():
    """A checkpoint taken from the fused path resumes on torch's (same keys, same tensors)."""
    (_, _), (p, st, _) = _run("AdamW", _adam_cast, steps=2)
    resumed = _unit(1000, 0)
    resumed.master.copy_(p)
    torch_path = TorchAdamW([resumed], _config("AdamW"))
    torch_path.load_state(resumed, st)
    assert set(torch_path.state(resumed)) == {"step", "exp_avg", "exp_avg_sq"}
    torch_path.step_unit(resumed, torch.ones(1000), torch.tensor(1.0), 1e-3)
    assert float(torch_path.state(resumed)["step"]) == 3.0


def test_not_built_for_other_optimizers_or_when_turned_off(monkeypatch):
    assert HostAdam.build(SimpleNamespace(), torch.bfloat16) is None  # not TorchAdamW: keeps two passes
    monkeypatch.setenv("ZGEN_HOST_KERNEL", "0")
    assert HostAdam.build(TorchAdamW([_unit(8, 0)], _config("AdamW")), torch.bfloat16) is None


def test_a_bad_thread_count_is_one_clear_error(monkeypatch):
    monkeypatch.setenv("ZGEN_HOST_THREADS", "many")
    with pytest.raises(ZgenError, match="ZGEN_HOST_THREADS='many' is not a positive whole number"):
        HostAdam.build(TorchAdamW([_unit(8, 0)], _config("AdamW")), torch.bfloat16)


@pytest.mark.skipif(os.environ.get("ZGEN_TEST_COMPILE") != "1", reason="compiles a C++ kernel (10-40 s); set ZGEN_TEST_COMPILE=1")
@pytest.mark.parametrize("kind", ["AdamW", "Adam"])
def test_compiled_kernel_matches(kind):
    built = HostAdam.build(TorchAdamW([_unit(8, 0)], _config(kind)), torch.bfloat16)
    assert built is not None
    (p_ref, st_ref), (p, st, out) = _run(kind, built._kernel, n=100_003)  # a length no vector width divides
    assert _close(p, p_ref)
    assert _close(st["exp_avg_sq"], st_ref["exp_avg_sq"])
    assert torch.equal(out, p.to(torch.bfloat16))
