"""Per-GPU memory of a ZeRO training step: model states, gathered parameters, buckets, activations.

Notation: P parameters, N data-parallel ranks (world size), b bytes of the
compute dtype (2 for bf16/fp16, 4 for fp32).

* Model states (the ZeRO paper's split, Adam): parameters b·P, gradients b·P,
  optimizer states K·P with K = 12 in mixed precision (fp32 master copy +
  Adam m and v) and K = 8 in fp32 (m and v). Stage 1 divides the optimizer
  states by N, stage 2 also the gradients, stage 3 also the parameters
  (ceil division). Optimizer offload moves optimizer states and the gradient
  partition to the CPU; parameter offload (stage 3) moves the parameter
  partition.
* Gathered parameters (stage 3): the unit being computed plus what the
  coordinator prefetches, b·min(P, L + min(prefetch, max(0, max_live - L)))
  with L the largest unit (a transformer block or the embedding).
* Persistent parameters (stage 3): parameters smaller than
  `stage3_param_persistence_threshold` stay whole on every rank (norm weights:
  (2·layers + 1)·hidden elements for a Llama-style model).
* Buckets: the gradient reduce bucket, b·reduce_bucket_size, twice with
  `overlap_comm` (double buffering); in stage 1/2 also the all-gather bucket
  b·allgather_bucket_size.
* Activations (no activation checkpointing, flash attention, SwiGLU MLP): per
  token and layer b·(6·h + 2·h_kv + 4·f) bytes, where h is the hidden size,
  h_kv = h·kv_heads/heads and f the MLP width; plus the logits at the start of
  backward, 2·tokens·V·(b + 4) bytes (the logits in the compute dtype and their
  fp32 copy for the loss, and the gradients of both).

DeepSpeed's own estimators stop at the model states; the other terms are what
actually decides whether a step fits. The estimate ignores the CUDA context,
allocator fragmentation and temporary buffers of individual kernels.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import ceil

from zgen.config.resolved import OffloadSpec
from zgen.launch import ModelShape

__all__ = ["MemoryItem", "MemoryBreakdown", "model_states", "activation_bytes", "estimate", "fits_with",
           "cheapest_fit", "compute_bytes"]


@dataclass(frozen=True, slots=True)
class MemoryItem:
    """One term of the estimate: bytes per GPU and the formula with its numbers."""

    name: str
    bytes: int
    formula: str


@dataclass(frozen=True, slots=True)
class MemoryBreakdown:
    """The per-GPU estimate; `gpu_mem_bytes` is the budget it is checked against (None = unknown)."""

    items: tuple[MemoryItem, ...]
    gpu_mem_bytes: int | None = None

    @property
    def total(self) -> int:
        """The sum of all items in bytes."""
        return sum(i.bytes for i in self.items)

    @property
    def fits(self) -> bool | None:
        """Whether the total fits the GPU memory (None when that is unknown)."""
        return None if self.gpu_mem_bytes is None else self.total <= self.gpu_mem_bytes


def compute_bytes(precision: str) -> int:
    """Bytes per element of the compute dtype: 2 for bf16/fp16, 4 for fp32."""
    return 4 if precision == "fp32" else 2


def _n(x: int) -> str:
    return f"{x:,}"


def model_states(params: int, world_size: int, stage: int, precision: str, *, offload_param: bool = False,
                 offload_optimizer: bool = False) -> tuple[MemoryItem, ...]:
    """Parameters, gradients and Adam optimizer states on one GPU (see the module docstring)."""
    b = compute_bytes(precision)
    k = 8 if precision == "fp32" else 12
    n = max(1, world_size)
    P = params

    def part(per: int, split: bool, off: bool, what: str) -> MemoryItem:
        if off:
            return MemoryItem(what, 0, f"offloaded to the CPU ({per} B x {_n(P)} on the host)")
        if split:
            return MemoryItem(what, per * ceil(P / n), f"{per} B x ceil({_n(P)} / {n} ranks)")
        return MemoryItem(what, per * P, f"{per} B x {_n(P)} (not partitioned at stage {stage})")

    dtype = "fp32" if precision == "fp32" else precision
    states = "fp32 Adam m, v" if precision == "fp32" else "fp32 master + Adam m, v"
    return (
        part(b, stage >= 3, offload_param and stage >= 3, f"parameters ({dtype})"),
        part(b, stage >= 2, offload_optimizer and stage >= 1, f"gradients ({dtype})"),
        part(k, stage >= 1, offload_optimizer and stage >= 1, f"optimizer states ({states})"),
    )


def activation_bytes(shape: ModelShape, micro_batch: int, seq_len: int, precision: str) -> int:
    """Activations saved for backward for one micro batch (0 when the model's dimensions are unknown)."""
    if not shape.layers or not shape.hidden or seq_len <= 0:
        return 0
    return _activation_terms(shape, micro_batch, seq_len, precision)[0]


def _activation_terms(shape: ModelShape, micro_batch: int, seq_len: int, precision: str) -> tuple[int, str]:
    b = compute_bytes(precision)
    h = shape.hidden or 0
    f = shape.ffn or 4 * h
    kv = h * shape.kv_heads // shape.heads if shape.kv_heads and shape.heads else h
    tokens = micro_batch * seq_len
    per_token_layer = 6 * h + 2 * kv + 4 * f
    layers = (shape.layers or 0) * tokens * per_token_layer * b
    logits = 2 * tokens * (shape.vocab or 0) * (b + 4)
    formula = (f"{shape.layers} layers x {_n(tokens)} tokens x (6x{h} + 2x{kv} + 4x{f}) x {b} B"
               + (f" + 2 x {_n(tokens)} tokens x {shape.vocab} vocab x ({b} + 4) B logits and their gradients"
                  if shape.vocab else ""))
    return layers + logits, formula


def _largest_unit(model: ModelShape) -> int | None:
    if model.largest_layer_params:
        return model.largest_layer_params
    if model.hidden and model.layers:
        h = model.hidden
        f = model.ffn or 4 * h
        kv = h * model.kv_heads // model.heads if model.kv_heads and model.heads else h
        block = 2 * h * h + 2 * h * kv + 3 * h * f + 2 * h
        return max(block, (model.vocab or 0) * h)
    return None


def estimate(resolved, model: ModelShape) -> MemoryBreakdown:
    """The per-GPU breakdown for a `ResolvedConfig` and a model (gpu_mem_bytes left None)."""
    z = resolved.zero
    stage, precision, n = z.stage, resolved.precision, resolved.world_size
    b = compute_bytes(precision)
    items = list(model_states(model.params, n, stage, precision, offload_param=z.offload_param.device != "none",
                              offload_optimizer=z.offload_optimizer.device != "none"))
    if stage == 3:
        unit = _largest_unit(model)
        if unit is None:
            live = min(model.params, z.prefetch_bucket_size)
            items.append(MemoryItem("gathered parameters", b * live,
                                    f"{b} B x prefetch bucket {_n(z.prefetch_bucket_size)} (largest unit unknown)"))
        else:
            prefetch = min(z.prefetch_bucket_size, max(0, z.max_live_parameters - unit))
            live = min(model.params, unit + prefetch)
            items.append(MemoryItem("gathered parameters", b * live,
                                    f"{b} B x min({_n(model.params)}, largest unit {_n(unit)} + prefetch {_n(prefetch)})"))
        if model.hidden and model.layers and model.hidden < z.param_persistence_threshold:
            persistent = (2 * model.layers + 1) * model.hidden
            items.append(MemoryItem("persistent parameters", b * persistent,
                                    f"{b} B x (2 x {model.layers} + 1) x {model.hidden} norm weights"))
    if stage >= 1:
        copies = 2 if z.overlap_comm else 1
        items.append(MemoryItem("reduce buckets", copies * b * z.reduce_bucket_size,
                                f"{copies} x {b} B x reduce_bucket_size {_n(z.reduce_bucket_size)}"))
    if stage in (1, 2):
        items.append(MemoryItem("all-gather bucket", b * z.allgather_bucket_size,
                                f"{b} B x allgather_bucket_size {_n(z.allgather_bucket_size)}"))
    seq = model.seq_len or 0
    if model.layers and model.hidden and seq:
        act, formula = _activation_terms(model, resolved.train_micro_batch_size_per_gpu, seq, precision)
        items.append(MemoryItem("activations", act, formula))
    return MemoryBreakdown(tuple(items))


def fits_with(resolved, model: ModelShape, gpu_mem: int) -> bool:
    """Whether the estimate for `resolved` fits in `gpu_mem` bytes."""
    return estimate(resolved, model).total <= gpu_mem


def cheapest_fit(resolved, model: ModelShape, gpu_mem: int, max_world: int = 1024):
    """The least disruptive change that makes the estimate fit, as (description, new breakdown), or None.

    Tried in order of cost to throughput: a higher ZeRO stage, a smaller micro
    batch with more accumulation steps (same global batch), CPU optimizer
    offload, more GPUs, CPU parameter offload.
    """
    z = resolved.zero
    for stage in range(z.stage + 1, 4):
        cand = replace(resolved, zero=replace(z, stage=stage))
        if fits_with(cand, model, gpu_mem):
            return f"set `zero_optimization.stage` to {stage}", estimate(cand, model)
    mbs, gas = resolved.train_micro_batch_size_per_gpu, resolved.gradient_accumulation_steps
    for smaller in range(mbs - 1, 0, -1):
        if (mbs * gas) % smaller:
            continue
        cand = replace(resolved, train_micro_batch_size_per_gpu=smaller, gradient_accumulation_steps=mbs * gas // smaller)
        if fits_with(cand, model, gpu_mem):
            return (f"set `train_micro_batch_size_per_gpu` to {smaller} and `gradient_accumulation_steps` to "
                    f"{mbs * gas // smaller} (same `train_batch_size`)", estimate(cand, model))
    best = resolved
    if best.zero.stage == 0:
        best = replace(best, zero=replace(best.zero, stage=3))
    cand = replace(best, zero=replace(best.zero, offload_optimizer=OffloadSpec(device="cpu")))
    if fits_with(cand, model, gpu_mem):
        stage_note = "" if resolved.zero.stage else " with `zero_optimization.stage` 3"
        return f"offload the optimizer states to the CPU (`offload_optimizer.device` \"cpu\"){stage_note}", estimate(cand, model)
    world = resolved.world_size
    while world < max_world:
        world *= 2
        cand = replace(resolved, world_size=world, train_batch_size=resolved.train_batch_size * world // resolved.world_size)
        if fits_with(cand, model, gpu_mem):
            return f"run on {world} GPUs (world size {world})", estimate(cand, model)
    cand = replace(best, zero=replace(best.zero, stage=3, offload_optimizer=OffloadSpec(device="cpu"),
                                       offload_param=OffloadSpec(device="cpu")))
    if fits_with(cand, model, gpu_mem):
        return "offload both parameters and optimizer states to the CPU (ZeRO-Infinity style, stage 3)", estimate(cand, model)
    return None
