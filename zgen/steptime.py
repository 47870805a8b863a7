"""How long one training step takes on one GPU, from the work a trace counted and the device's rates.

Standard library only: `zgen plan --auto` (`zgen.plan.auto`) predicts each
candidate setting's step with `step_time(work, rates)`. Per micro-step:

* matmul FLOPs at the GEMM rate: the forward's, twice that for the backward
  (the gradients of input and weight), and the forward's again for every
  unit recomputed in backward;
* attention FLOPs (causal half counted) at the attention rate: the forward's,
  2.5 times that for a fused attention's backward (five matrix products
  against two), and the forward's again where recomputed;
* elementwise bytes (what the trace's other calls read and write in the
  forward) at the memory bandwidth, times `eager_pointwise` for code that runs
  eagerly (the backward moves about three times the forward's bytes) or
  `compiled_pointwise` for compiled units (inductor fuses the chains and
  recomputes them in backward);
* the loss over the logits: `plain_loss_bytes` per logit for the model's own
  cross-entropy in eager mode (slice and upcast copies, log-softmax forward
  and backward, the loss's fills), `fused_loss_bytes` for the runtime's fused
  projection and loss (two reads of each chunk of bf16 logits and one write
  of its gradient);
* gradient folding into fp32 shards when gradients accumulate or are
  reduce-scattered; communication (`commcost`) and, with parameter offload,
  the copies up from host memory, both counted where they outlast the
  compute they overlap.

Per optimizer step: the optimizer's pass over its state at the memory
bandwidth, or with optimizer offload the pipeline `zgen.runtime.offload`
runs unit by unit: each unit's fp32 gradient copied down (`d2h_bytes`), its
update on the host (`host_update_params`: the Adam(W) update and the cast to
the compute dtype in one pass, `zgen.runtime.host_adam`), and without
parameter offload its compute-dtype weights copied up (`h2d_bytes`). The
update is bound by host memory bandwidth and the copies to and from pinned
host memory (gradients, weights, parameter offload's gathers) share it: the
update's stage is stretched by their bytes over its own
(`host_update_bytes` per parameter). The three stages overlap
across units, so the pipeline takes its slowest stage over the whole shard
plus the other stages of one unit (filling and draining it, the largest unit
counted). Where the step's divisor needs every gradient (global-norm
clipping, fp16) the pipeline starts when the backward ends and overlaps the
next forward, whose units wait for their own updates, so it counts where it
outlasts that forward. Otherwise (`early_update`) each unit's update starts
as soon as its gradient is final in the last micro-step's backward: the
pipeline starts once the backward has reached the first unit's gradient
(`first_grad`, its share of the backward: the loss, the head and the last
unit) and runs under the rest of the backward; what it has left when the
backward ends runs in the next forward's order and counts where it outlasts
that forward, and never less than the pipeline of the parameters whose
gradients are final only at the end of the backward (`last_grad`: the root's
own and the persistent ones, which the forward needs first). A partial offload
(`kept_params`, `offload_optimizer.ratio` below 1) keeps the units stepped
first on the device: they leave the host's pipeline, which shrinks to the
rest, take the device optimizer's pass at the memory bandwidth, and take the
end-of-backward gradients out of the host's share first.

`H200` holds rates measured on one H200 by `bench/` (`bench/NOTES.md`,
run 11's kernel table and runs 7 and 10); `--gemm-tflops`, `--attention-tflops`
and `--hbm-gbps` state others. The rates are effective ones: what the model's
own kernels reached at seq 8192, not the datasheet's peaks.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Rates", "H200", "Work", "StepTime", "step_time"]


@dataclass(frozen=True, slots=True)
class Rates:
    """A device's effective rates (per second) and the memory it has."""

    name: str
    memory_bytes: int
    gemm_flops: float
    attention_flops: float
    hbm_bytes: float
    d2h_bytes: float  # device to pinned host memory, one stream
    h2d_bytes: float  # pinned host memory to device, one stream
    host_update_params: float  # the host's Adam(W) update with its cast to the compute dtype, alone
    host_update_bytes: float = 30.0  # host memory it reads and writes per parameter (runtime.host_adam: one pass)
    eager_pointwise: float = 4.0
    compiled_pointwise: float = 0.88
    plain_loss_bytes: float = 72.0
    fused_loss_bytes: float = 8.0
    optimizer_bytes: float = 28.0  # split-master AdamW (26) and the gradient norm (2), per parameter
    fp32_optimizer_bytes: float = 40.0  # fused AdamW on fp32 shards (28), the casts to bf16 (12)


# bench/NOTES.md run 11 (2 H200, Llama-3.2-1B shape, seq 8192, compiled, kernel table per GPU): GEMM 432.03 ms
# for 303.7 TFLOP at micro batch 5 (703 TFLOP/s; 697 at micro batch 1); cuDNN attention 213.35 ms for 77.0
# TFLOP (causal half, backward 2.5x forward: 361 TFLOP/s); inductor's fused block kernels 8.38 ms per sequence
# for 41.1 GB of traced forward elementwise bytes (0.88 of them at 4.3 TB/s); the eager loss (softmax/NLL,
# logits copies, fills) 17.6 ms per sequence for 1.05e9 logits (72 bytes each at 4.3 TB/s). Copy bandwidth
# 4.3 TB/s (KINDS.md, a device-to-device copy on an H200). Eager elementwise: run 7's eager step exceeds the
# compiled one by 33 ms at micro batch 1 (about 4x the forward's bytes). Host update and host link: issue 21's
# run f (`bench/offload_rates.py`, one H200 with 16 host cores, bench/results/issue21_f_m1_rates.json): the
# one-pass update with its cast (`runtime.host_adam`) 3.52e9 parameters/s on one unit's shard of 218M (torch's
# fused CPU AdamW alone 3.87e9/s, with the separate cast 2.86e9/s); pinned copies 55.2 GB/s down (fp32) and
# 55.1 GB/s up (bf16) on their own. (Run d, another host: AdamW and cast together 2.45e9/s, copies 52.3 and
# 50.9 GB/s.) Memory: nvidia-smi's 143,771 MiB.
H200 = Rates(
    name="H200",
    memory_bytes=143_771 * 2**20,
    gemm_flops=700e12,
    attention_flops=360e12,
    hbm_bytes=4.3e12,
    d2h_bytes=55.2e9,
    h2d_bytes=55.1e9,
    host_update_params=3.52e9,
)


@dataclass(frozen=True, slots=True)
class Work:
    """What one micro-step and one optimizer step do (micro batch already applied)."""

    gemm_flops: float  # forward matmul FLOPs of one micro-step
    attention_flops: float  # forward attention FLOPs
    recompute_gemm_flops: float  # forward FLOPs of the units recomputed in backward
    recompute_attention_flops: float
    eager_pointwise_bytes: float  # forward elementwise bytes of code that runs eagerly
    compiled_pointwise_bytes: float  # forward elementwise bytes of compiled units
    recompute_pointwise_bytes: float  # of those, the recomputed units' (eager-equivalent forward bytes)
    recompute_compiled: bool
    logits: float  # logit elements one micro-step's loss reads
    fused_loss: bool
    micro_steps: int
    params: int  # parameters this rank updates (its shards)
    fold_bytes: float = 0.0  # gradient folding per micro-step
    comm_seconds: float = 0.0  # per micro-step collectives (alpha-beta)
    param_copy_bytes: float = 0.0  # per micro-step host-to-device copies (parameter offload)
    offload_optimizer: bool = False
    split_master: bool = True
    grad_copy_bytes: float = 0.0  # per optimizer step, gradients down to the host (optimizer offload)
    weight_copy_bytes: float = 0.0  # per optimizer step, updated weights up to the device (optimizer offload only)
    largest_unit: float = 0.0  # the largest unit's share of the parameters (the offload pipeline's fill)
    early_update: bool = False  # offloaded updates start in backward as gradients become final (no clipping, no fp16)
    first_grad: float = 1.0  # share of the last micro-step's backward before the first unit's gradient is final
    last_grad: float = 0.0  # share of the parameters whose gradients are final only when the backward ends
    kept_params: int = 0  # of `params`, those whose optimizer a partial offload keeps on the device (the first stepped)


@dataclass(frozen=True, slots=True)
class StepTime:
    """The prediction, split into its parts (seconds per optimizer step)."""

    matmul: float
    attention: float
    elementwise: float
    loss: float
    exposed: float  # communication, parameter copies and host update not hidden behind compute
    optimizer: float
    forward: float  # one micro-step's forward (what a host update can overlap)

    @property
    def total(self) -> float:
        return self.matmul + self.attention + self.elementwise + self.loss + self.exposed + self.optimizer


def step_time(w: Work, r: Rates) -> StepTime:
    """The predicted step of `w` on a device with rates `r` (see the module docstring)."""
    n = w.micro_steps
    matmul = (3 * w.gemm_flops + w.recompute_gemm_flops) / r.gemm_flops
    attention = (3.5 * w.attention_flops + w.recompute_attention_flops) / r.attention_flops
    recompute_pw = w.recompute_pointwise_bytes * (r.compiled_pointwise / 3 if w.recompute_compiled else 1.0)
    elementwise = (w.eager_pointwise_bytes * r.eager_pointwise + w.compiled_pointwise_bytes * r.compiled_pointwise
                   + recompute_pw + w.fold_bytes) / r.hbm_bytes
    loss = w.logits * (r.fused_loss_bytes if w.fused_loss else r.plain_loss_bytes) / r.hbm_bytes
    compute = matmul + attention + elementwise + loss
    exposed = max(0.0, w.comm_seconds - compute) + max(0.0, w.param_copy_bytes / r.h2d_bytes - compute)
    forward = (w.gemm_flops / r.gemm_flops + w.attention_flops / r.attention_flops
               + (w.eager_pointwise_bytes + w.compiled_pointwise_bytes * r.compiled_pointwise / 3) / r.hbm_bytes)
    if w.offload_optimizer:
        # The update is bound by host memory bandwidth, which every copy to or from pinned host memory shares.
        hosted = max(1, w.params - w.kept_params)
        copies = w.grad_copy_bytes + w.weight_copy_bytes + n * w.param_copy_bytes
        shared = 1 + copies / max(1.0, hosted * r.host_update_bytes)
        stages = (w.grad_copy_bytes / r.d2h_bytes, shared * hosted / r.host_update_params,
                  w.weight_copy_bytes / r.h2d_bytes)
        host = max(stages) + w.largest_unit * (sum(stages) - max(stages))
        optimizer = w.kept_params * r.fp32_optimizer_bytes / r.hbm_bytes
        if w.early_update:
            backward = max(0.0, compute - forward)  # the last micro-step's (recomputation included)
            left = host - (1 - w.first_grad) * backward  # the pipeline's work still queued when the backward ends
            # the gradients final only at the end belong to the units stepped first, which a partial offload keeps
            late = max(0.0, w.last_grad * w.params - w.kept_params) / hosted
            step_exposed = max(0.0, left - forward, late * sum(stages))
        else:
            step_exposed = max(0.0, host - forward)
    else:
        per = r.optimizer_bytes if w.split_master else r.fp32_optimizer_bytes
        optimizer = w.params * per / r.hbm_bytes
        step_exposed = 0.0
    return StepTime(matmul=n * matmul, attention=n * attention, elementwise=n * elementwise, loss=n * loss,
                    exposed=n * exposed + step_exposed, optimizer=optimizer, forward=forward)
