"""fp32 master weights stored as a bf16 compute copy plus a 16-bit remainder, exactly.

Write the fp32 bit pattern `b` of a weight as `hi * 2**16 + lo` with
`hi = (b + 0x8000) >> 16` and `lo = b - (hi << 16)` (integer arithmetic):
`hi` is the weight rounded to bf16 (to nearest, ties away from zero, so it
differs from torch's round-to-nearest-even cast only on exact ties) and `lo`,
a signed 16-bit integer, is what rounding removed. Together they are the fp32
weight bit for bit, in the same 4 bytes.

So with bf16 compute the engine keeps no separate fp32 master and no bf16 copy:
`hi` *is* what the forward reads (at world size 1 the module's views point
straight into it; above 1 it is the all-gather input), and the optimizer
rebuilds the fp32 value, updates it and splits it again in one pass. On CUDA
that pass is a Triton kernel reading bf16 or fp32 gradients; elsewhere (and
as the reference) the same arithmetic runs as torch operations.
"""

from __future__ import annotations

import math
import warnings

import torch

__all__ = ["encode", "decode", "adamw_step", "triton_available"]


def encode(x: torch.Tensor, hi: torch.Tensor, lo: torch.Tensor) -> None:
    """Split fp32 `x` into `hi` (bf16) and `lo` (int16), in place."""
    b = x.contiguous().view(torch.int32)
    top = (b + 0x8000) >> 16
    lo.copy_((b - (top << 16)).to(torch.int16))
    hi.view(torch.int16).copy_(top.to(torch.int16))


def decode(hi: torch.Tensor, lo: torch.Tensor) -> torch.Tensor:
    """The fp32 values `hi` and `lo` encode (a new tensor)."""
    b = (hi.view(torch.int16).to(torch.int32) << 16) + lo.to(torch.int32)
    return b.view(torch.float32)


def adamw_step(
    hi: torch.Tensor,
    lo: torch.Tensor,
    exp_avg: torch.Tensor,
    exp_avg_sq: torch.Tensor,
    grad: torch.Tensor,
    grad_scale: torch.Tensor,
    *,
    step: int,
    lr: float,
    beta1: float,
    beta2: float,
    eps: float,
    weight_decay: float,
    decoupled: bool,
) -> None:
    """One Adam(W) update of a split weight (torch's formulas; gradients divided by `grad_scale`)."""
    bc1 = 1 - beta1**step
    bc2_sqrt = math.sqrt(1 - beta2**step)
    if hi.is_cuda and triton_available():
        try:
            _triton_step(hi, lo, exp_avg, exp_avg_sq, grad, grad_scale, lr, beta1, beta2, eps, weight_decay,
                         decoupled, bc1, bc2_sqrt)
            return
        except Exception as e:  # a Triton that cannot compile here: warn once, use the torch path
            _disable_triton(e)
    x = decode(hi, lo)
    g = grad.float() / grad_scale
    if decoupled:
        x.mul_(1 - lr * weight_decay)
    elif weight_decay:
        g = g.add(x, alpha=weight_decay)
    exp_avg.lerp_(g, 1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
    denom = (exp_avg_sq.sqrt() / bc2_sqrt).add_(eps)
    x.addcdiv_(exp_avg, denom, value=-lr / bc1)
    encode(x, hi, lo)


_TRITON = None


def triton_available() -> bool:
    global _TRITON
    if _TRITON is None:
        try:
            import triton  # noqa: F401

            _TRITON = _build_kernel()
        except Exception:  # no triton, or one that cannot compile here: the torch path is used
            _TRITON = False
    return _TRITON is not False


def _disable_triton(error: Exception) -> None:
    global _TRITON
    _TRITON = False
    warnings.warn(f"zgen.runtime: the Triton optimizer kernel failed ({error}); using torch operations", stacklevel=3)


def _build_kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def kernel(hi_ptr, lo_ptr, m_ptr, v_ptr, g_ptr, scale_ptr, n, lr, beta1, beta2, eps, wd, step_size, bc2_sqrt,
               DECOUPLED: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        top = tl.load(hi_ptr + offs, mask=mask, other=0).to(tl.int32)
        rest = tl.load(lo_ptr + offs, mask=mask, other=0).to(tl.int32)
        x = ((top << 16) + rest).to(tl.float32, bitcast=True)
        g = tl.load(g_ptr + offs, mask=mask, other=0).to(tl.float32) / tl.load(scale_ptr)
        m = tl.load(m_ptr + offs, mask=mask, other=0)
        v = tl.load(v_ptr + offs, mask=mask, other=0)
        if DECOUPLED:
            x = x * (1 - lr * wd)
        else:
            g = g + wd * x
        m = m + (1 - beta1) * (g - m)
        v = v * beta2 + (1 - beta2) * g * g
        x = x - step_size * (m / (tl.sqrt(v) / bc2_sqrt + eps))
        b = x.to(tl.int32, bitcast=True)
        top = (b + 0x8000) >> 16
        rest = b - (top << 16)
        tl.store(hi_ptr + offs, top.to(tl.int16), mask=mask)
        tl.store(lo_ptr + offs, rest.to(tl.int16), mask=mask)
        tl.store(m_ptr + offs, m, mask=mask)
        tl.store(v_ptr + offs, v, mask=mask)

    return kernel


def _triton_step(hi, lo, m, v, grad, scale, lr, beta1, beta2, eps, wd, decoupled, bc1, bc2_sqrt) -> None:
    n = hi.numel()
    block = 1024
    _TRITON[(triton_cdiv(n, block),)](
        hi.view(torch.int16), lo, m, v, grad, scale, n, lr, beta1, beta2, eps, wd, lr / bc1, bc2_sqrt,
        DECOUPLED=decoupled, BLOCK=block,
    )


def triton_cdiv(n: int, d: int) -> int:
    return -(-n // d)
