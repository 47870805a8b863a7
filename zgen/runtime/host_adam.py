"""The offloaded Adam(W) update in one pass over host memory, writing the compute-dtype copy as it goes.

Under optimizer offload the step is bound by the host update, and the host
update by memory bandwidth: torch's fused CPU AdamW reads and writes 28 bytes
per parameter (fp32 gradient, master and two moments), then a second pass
casts the master into the compute-dtype copy the device reads (6 more bytes,
and on 16 cores a slower pass than the update: 22.6 against 66.3 ms for a
218M-parameter shard on the H200 host, `bench/NOTES.md` run d). Here both
are one loop: the update stores the new master, the moments and the bf16
weight in the same pass, 30 bytes per parameter.

The loop is `_adam_cast` compiled by torch's inductor into one vectorised
C++ kernel over any shard length (compiled once per process, on the calling
thread, when a `HostAdam` is made: it needs a C++ compiler, and takes
10-40 s the first time, less from inductor's cache). Where it cannot be
compiled, `HostAdam.build` returns None and the offload keeps the two passes.
The arithmetic is torch's fused AdamW's, in its order (gradient divided by
the step's scale, decoupled or L2 weight decay, `exp_avg` by lerp, the bias
corrections folded into the step size and the denominator); the compiler may
contract a multiply-add, so results agree with torch's to fp32 rounding
(about 1e-7 relative), not bit for bit. The state is the same dictionary
`optim.TorchAdamW` keeps (`exp_avg`, `exp_avg_sq`, a float32 `step`), so
checkpoints move between the two paths.

The kernel runs on torch's thread count (`ZGEN_HOST_THREADS` sets another:
on one H200 host 12 threads were no faster than 15, `bench/NOTES.md` run f).
`ZGEN_HOST_KERNEL=0` in the environment keeps the two passes (for
comparisons).
"""

from __future__ import annotations

import os
import warnings

import torch

from zgen.errors import ZgenError

from .optim import TorchAdamW
from .unit import UnitState

__all__ = ["HostAdam"]


def _adam_cast(p, out, m, v, g, scale, wd, one_minus_beta1, beta2, one_minus_beta2, step_size, bc2_sqrt, eps,
               decoupled: bool):
    """One Adam(W) step of fp32 `p` (moments `m`, `v`) from `g / scale`, also written to `out` (compute dtype).

    The numbers are 0-dim float32 tensors, so a new learning rate or step count compiles nothing new. `wd` is
    AdamW's decay factor `1 - lr * weight_decay` when `decoupled`, else Adam's (L2) weight decay.
    """
    g = g / scale
    if decoupled:
        p_new = p * wd
    else:
        g = g + wd * p
        p_new = p
    m_new = m + one_minus_beta1 * (g - m)
    v_new = v * beta2 + one_minus_beta2 * g * g
    p_new = p_new - step_size * m_new / (v_new.sqrt() / bc2_sqrt + eps)
    p.copy_(p_new)
    m.copy_(m_new)
    v.copy_(v_new)
    out.copy_(p_new)


class HostAdam:
    """`TorchAdamW`'s update of one unit's host master, fused with the cast into its compute-dtype copy."""

    def __init__(self, inner: TorchAdamW, kernel) -> None:
        self.inner = inner
        self._kernel = kernel
        group = inner.torch.param_groups[0]
        self._betas = group["betas"]
        self._eps = group["eps"]
        self._wd = group["weight_decay"]
        self._decoupled = isinstance(inner.torch, torch.optim.AdamW)

    @classmethod
    def build(cls, inner, compute_dtype: torch.dtype) -> "HostAdam | None":
        """The fused update over `inner`'s state, compiled now; None where it does not apply or cannot compile."""
        if not isinstance(inner, TorchAdamW) or os.environ.get("ZGEN_HOST_KERNEL", "1") == "0":
            return None
        given = os.environ.get("ZGEN_HOST_THREADS", "")
        if given and not (given.isdigit() and int(given) > 0):
            raise ZgenError(f"ZGEN_HOST_THREADS={given!r} is not a positive whole number",
                            help="set it to the host threads the offloaded update may use, e.g. ZGEN_HOST_THREADS=14, "
                                 "or unset it for torch's thread count")
        threads = int(given) if given else torch.get_num_threads()
        try:
            import torch._inductor.config as inductor

            fused = cls(inner, torch.compile(_adam_cast, dynamic=True, fullgraph=True))
            n = 64  # any length: the kernel is compiled for a symbolic one
            p, m, v, g = (torch.zeros(n) for _ in range(4))
            one = torch.ones(())
            with inductor.patch({"cpp.threads": threads}):  # the thread count is fixed in the compiled code
                fused._kernel(p, torch.empty(n, dtype=compute_dtype), m, v, g, *[one] * 8, decoupled=fused._decoupled)
        except Exception as e:  # no C++ compiler, an inductor without CPU support, ...
            warnings.warn(f"zgen: the one-pass host AdamW could not be compiled ({type(e).__name__}: {e}); "
                          "the offloaded update keeps two passes", stacklevel=2)
            return None
        return fused

    def step_unit(self, u: UnitState, grad: torch.Tensor, grad_scale: torch.Tensor, lr: float,
                  out: torch.Tensor) -> None:
        """Update `u.master` from `grad / grad_scale` and write the result to `out` (a host tensor like the shard)."""
        st = self.inner.torch.state.get(u.master)
        if not st:
            st = self.inner.torch.state[u.master] = {
                "step": torch.tensor(0.0, dtype=torch.float32, device=u.master.device),
                "exp_avg": torch.zeros_like(u.master),
                "exp_avg_sq": torch.zeros_like(u.master),
            }
        st["step"] += 1
        step = float(st["step"])
        beta1, beta2 = self._betas
        f32 = lambda x: torch.tensor(x, dtype=torch.float32)  # noqa: E731
        wd = 1 - lr * self._wd if self._decoupled else self._wd
        self._kernel(
            u.master, out, st["exp_avg"], st["exp_avg_sq"], grad, grad_scale.to(torch.float32),
            f32(wd), f32(1 - beta1), f32(beta2), f32(1 - beta2),
            f32(lr / (1 - beta1**step)), f32((1 - beta2**step) ** 0.5), f32(self._eps), decoupled=self._decoupled,
        )
