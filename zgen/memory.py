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
* Stage 3, per position of the step (`step_timeline`): the units gathered
  (the running one, the root unit whose forward encloses every block, units
  kept from forward to backward by the reuse distance), the all-gathers in
  flight (the prefetch rule), the running unit's full gradient before its
  reduce-scatter, and the activations saved so far. `zgen plan` replays the
  traced plan; `estimate` replays the plan the same rules draw for the
  model's shape (the root unit, then `layers` equal blocks) and reports its
  peak position, so both give one figure for one model.
* Persistent parameters (stage 3): parameters at or below
  `stage3_param_persistence_threshold` elements stay whole on every rank
  (norm weights: (2·layers + 1)·hidden elements for a Llama-style model).
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

from collections.abc import Mapping
from dataclasses import dataclass, replace
from math import ceil

from zgen.launch import ModelShape
from zgen.schedule.prefetch import prefetch_lists
from zgen.schedule.replay import simulate
from zgen.schedule.retention import kept_units
from zgen.schedule.plan import ROOT, Plan, Unit
from zgen.zero_policy import stays_gathered

__all__ = ["MemoryItem", "MemoryBreakdown", "MemoryPoint", "model_states", "activation_bytes", "estimate",
           "step_timeline", "shape_plan", "fits_with", "cheapest_fit", "compute_bytes", "UnitMemory",
           "Setting", "setting_timeline"]


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
    if not shape.traced_activation_bytes and (not shape.layers or not shape.hidden or seq_len <= 0):
        return 0
    return _activation_terms(shape, micro_batch, seq_len, precision)[0]


def _activation_terms(shape: ModelShape, micro_batch: int, seq_len: int, precision: str) -> tuple[int, str]:
    # The formula knows flash attention; the trace (math attention on meta) is the fallback for models
    # whose dimensions nothing states.
    if shape.traced_activation_bytes and not (shape.layers and shape.hidden):
        return (shape.traced_activation_bytes * micro_batch,
                f"{_n(shape.traced_activation_bytes)} B saved for backward per sample (traced) x {micro_batch} micro batch")
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


def _block_parts(shape: ModelShape) -> list[int] | None:
    """Elements of each parameter of one transformer block (None when the shape does not say)."""
    h = shape.hidden
    if shape.largest_layer_params:
        return [shape.largest_layer_params - 2 * h, h, h] if h and shape.largest_layer_params > 2 * h \
            else [shape.largest_layer_params]
    if h and shape.layers:
        f = shape.ffn or 4 * h
        kv = h * shape.kv_heads // shape.heads if shape.kv_heads and shape.heads else h
        return [h * h, h * kv, h * kv, h * h, h * f, h * f, h * f, h, h]  # q k v o, gate up down, two norms
    return None


def shape_plan(shape: ModelShape, zero) -> tuple[Plan, dict[str, int], int] | None:
    """The plan the planner's rules draw for `shape`: the root unit, then `layers` equal blocks.

    Returns the plan, elements per unit and persistent elements, or None
    when the shape has no layer dimensions. Parameters at or below the
    persistence threshold leave their unit, units left empty are dropped,
    and the root unit holds what the blocks do not (embeddings, head, final norm).
    """
    parts = _block_parts(shape)
    if parts is None or not shape.layers:
        return None
    threshold = zero.param_persistence_threshold
    final_norm = shape.hidden or 0
    root = max(0, shape.params - shape.layers * sum(parts) - final_norm)
    persistent = shape.layers * sum(x for x in parts if stays_gathered(x, threshold))
    persistent += sum(x for x in (root, final_norm) if x > 0 and stays_gathered(x, threshold))
    block = sum(x for x in parts if not stays_gathered(x, threshold))
    blocks = [f"layers.{i}" for i in range(shape.layers)] if block else []
    numel = {m: block for m in blocks}
    if not stays_gathered(root, threshold):
        numel[ROOT] = root
    units = [Unit(module=m, params=(f"{m or 'root'}.parameters",)) for m in numel]
    forward = tuple(m for m in [ROOT, *blocks] if m in numel)
    backward = tuple(m for m in [ROOT, *reversed(blocks)] if m in numel)
    keep = kept_units(units, forward, backward, numel, zero.max_reuse_distance, zero.max_live_parameters)
    units = [replace(u, reshard_after_forward=u.module not in keep) for u in units]
    draft = Plan(units=tuple(units), forward_order=forward, backward_order=backward)
    fwd, bwd = prefetch_lists(draft, numel, zero.prefetch_bucket_size, zero.max_live_parameters)
    return replace(draft, forward_prefetch=fwd, backward_prefetch=bwd), numel, persistent


@dataclass(frozen=True, slots=True)
class MemoryPoint:
    """Per-GPU bytes while one unit runs, split the way `zgen plan` prints and plots them."""

    label: str  # "fwd 3" / "bwd 3"
    unit: str
    states: int  # model states (sharded parameters, gradients, optimizer)
    persistent: int  # persistent parameters, gathered all step
    gathered: int  # full parameters of units gathered and running or waiting
    inflight: int  # full parameters of units whose all-gather this position issued ahead of use
    activations: int  # saved activations at this point (spread evenly over the units)
    gradients: int  # gradient buffers: the running unit's before its reduction, the shards (`setting_timeline`)
    buckets: int  # gradient reduce buckets

    @property
    def total(self) -> int:
        return (self.states + self.persistent + self.gathered + self.inflight + self.activations + self.gradients
                + self.buckets)


def step_timeline(plan: Plan, numel: Mapping[str, int], persistent: int, resolved, shape: ModelShape) -> list[MemoryPoint]:
    """Per-GPU memory at every position of one stage-3 step under `plan`.

    `numel` gives each unit's elements, `persistent` the persistent
    elements; `shape.params` and `shape.seq_len` the model's parameters and
    sequence length. The layers' activations grow evenly over the forward's
    unit positions after the root's and shrink the same way in backward; the
    logits exist from the end of the forward until the root's backward.
    """
    z = resolved.zero
    per = compute_bytes(resolved.precision)
    states = sum(i.bytes for i in model_states(
        shape.params, resolved.world_size, z.stage, resolved.precision,
        offload_param=z.offload_param.device != "none", offload_optimizer=z.offload_optimizer.device != "none",
    ))
    buckets = _reduce_buckets(z, per).bytes
    micro, seq = resolved.train_micro_batch_size_per_gpu, shape.seq_len or 0
    act_total = activation_bytes(shape, micro, seq, resolved.precision)
    act_layers = activation_bytes(replace(shape, vocab=None), micro, seq, resolved.precision)
    logits = act_total - act_layers
    steps = simulate(plan)
    if not steps:
        # No unit is ever gathered (every parameter persistent): the step's one level is its peak.
        return [MemoryPoint(label="step", unit="all persistent", states=states, persistent=persistent * per,
                            gathered=0, inflight=0, activations=act_total, gradients=0, buckets=buckets)]
    n_fwd = sum(1 for s in steps if s.phase == "forward")
    growing = max(1, n_fwd - 1)  # the root's position starts the forward; each later one adds activations
    points = []
    for s in steps:
        ahead = set(s.issued)
        if s.phase == "forward":
            acts = act_layers * s.index // growing + (logits if s.index == n_fwd - 1 else 0)
            grads = 0
        else:
            acts = act_layers * (growing - max(0, s.index - 1)) // growing + (logits if s.index == 0 else 0)
            grads = numel[s.unit] * per
        points.append(MemoryPoint(
            label=f"{'fwd' if s.phase == 'forward' else 'bwd'} {s.index}",
            unit=s.unit,
            states=states,
            persistent=persistent * per,
            gathered=sum(numel[m] for m in s.gathered if m not in ahead) * per,
            inflight=sum(numel[m] for m in ahead) * per,
            activations=acts,
            gradients=grads,
            buckets=buckets,
        ))
    return points


def _reduce_buckets(z, b: int) -> MemoryItem:
    copies = 2 if z.overlap_comm else 1
    return MemoryItem("reduce buckets", copies * b * z.reduce_bucket_size,
                      f"{copies} x {b} B x reduce_bucket_size {_n(z.reduce_bucket_size)}")


def _stage3_items(resolved, model: ModelShape) -> list[MemoryItem] | None:
    """Gathered, persistent, gradient and activation terms at the peak of the plan drawn for `model`'s shape."""
    z = resolved.zero
    drawn = shape_plan(model, z)
    if drawn is None:
        return None
    plan, numel, persistent = drawn
    b = compute_bytes(resolved.precision)
    points = step_timeline(plan, numel, persistent, resolved, model)
    peak = max(points, key=lambda p: p.total)
    root = numel.get(ROOT, 0)
    block = max((n for m, n in numel.items() if m != ROOT), default=0)
    live = (peak.gathered + peak.inflight) // b
    kept = sum(1 for u in plan.units if not u.reshard_after_forward and u.module != ROOT)
    where = f"at {peak.label}, the step's peak"
    items = [MemoryItem("gathered parameters", peak.gathered + peak.inflight,
                        f"{b} B x {_n(live)} {where}: root unit {_n(root)}"
                        + (f" + blocks of {_n(block)} running, prefetched or kept ({kept} kept for backward)"
                           if block else ""))]
    if persistent:
        items.append(MemoryItem("persistent parameters", peak.persistent,
                                f"{b} B x {_n(persistent)} (parameters of at most {_n(z.param_persistence_threshold)})"))
    if peak.gradients:
        items.append(MemoryItem("unit gradient", peak.gradients,
                                f"{b} B x {_n(peak.gradients // b)}: the running unit's gradient before its reduce-scatter"))
    if peak.activations:
        act, formula = _activation_terms(model, resolved.train_micro_batch_size_per_gpu, model.seq_len or 0,
                                         resolved.precision)
        items.append(MemoryItem("activations", peak.activations,
                                formula if peak.activations == act else f"{where}, part of: {formula}"))
    return items


def estimate(resolved, model: ModelShape) -> MemoryBreakdown:
    """The per-GPU breakdown for a `ResolvedConfig` and a model (gpu_mem_bytes left None)."""
    z = resolved.zero
    stage, precision, n = z.stage, resolved.precision, resolved.world_size
    b = compute_bytes(precision)
    items = list(model_states(model.params, n, stage, precision, offload_param=z.offload_param.device != "none",
                              offload_optimizer=z.offload_optimizer.device != "none"))
    stage3 = _stage3_items(resolved, model) if stage == 3 else None
    if stage == 3 and stage3 is None:
        live = min(model.params, z.prefetch_bucket_size)
        items.append(MemoryItem("gathered parameters", b * live,
                                f"{b} B x prefetch bucket {_n(z.prefetch_bucket_size)} (largest unit unknown)"))
    gradient = [i for i in stage3 or () if i.name == "unit gradient"]
    items.extend(i for i in stage3 or () if i.name != "unit gradient")
    if stage >= 1:
        items.append(_reduce_buckets(z, b))
    if stage in (1, 2):
        items.append(MemoryItem("all-gather bucket", b * z.allgather_bucket_size,
                                f"{b} B x allgather_bucket_size {_n(z.allgather_bucket_size)}"))
    seq = model.seq_len or 0
    if stage3 is None and (model.traced_activation_bytes or (model.layers and model.hidden and seq)):
        act, formula = _activation_terms(model, resolved.train_micro_batch_size_per_gpu, seq, precision)
        items.append(MemoryItem("activations", act, formula))
    return MemoryBreakdown(tuple(items + gradient))


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
    # The config's own offload type, replaced: the memory model imports nothing from zgen.config.
    cpu = replace(best.zero.offload_optimizer, device="cpu")
    cand = replace(best, zero=replace(best.zero, offload_optimizer=cpu))
    if fits_with(cand, model, gpu_mem):
        stage_note = "" if resolved.zero.stage else " with `zero_optimization.stage` 3"
        return f"offload the optimizer states to the CPU (`offload_optimizer.device` \"cpu\"){stage_note}", estimate(cand, model)
    world = resolved.world_size
    while world < max_world:
        world *= 2
        cand = replace(resolved, world_size=world, train_batch_size=resolved.train_batch_size * world // resolved.world_size)
        if fits_with(cand, model, gpu_mem):
            return f"run on {world} GPUs (world size {world})", estimate(cand, model)
    cand = replace(best, zero=replace(best.zero, stage=3, offload_optimizer=cpu,
                                       offload_param=replace(best.zero.offload_param, device="cpu")))
    if fits_with(cand, model, gpu_mem):
        return "offload both parameters and optimizer states to the CPU (ZeRO-Infinity style, stage 3)", estimate(cand, model)
    return None


# -- one setting of the search (`zgen plan --auto`) ------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class UnitMemory:
    """One unit under a setting: what it gathers and what it keeps for backward (bytes per GPU, micro batch applied).

    `activations`: what the unit keeps from its forward to its backward (its
    inputs alone when it is recomputed); `recompute`: what its recomputation
    holds again while its backward runs (0 when it is not recomputed).
    """

    module: str
    params: int
    activations: int
    recompute: int = 0


@dataclass(frozen=True, slots=True)
class Setting:
    """How the runtime stores a model for one candidate of the search (see `setting_timeline`)."""

    world_size: int
    precision: str
    accumulation: int
    split_master: bool
    offload_optimizer: bool = False
    offload_param: bool = False
    loss_peak: int = 0  # bytes the loss holds at its peak (its temporaries and its gradients), beyond the activations
    head_grad: int = 0  # the output projection's weight gradient, held from the loss to the root's backward
    kept_states: int = 0  # partial optimizer offload: bytes of fp32 masters and moments kept on the GPU


def setting_timeline(plan: Plan, units: Mapping[str, UnitMemory], params: int, persistent: int,
                     s: Setting) -> list[MemoryPoint]:
    """Per-GPU bytes at every position of the last micro-step of an optimizer step under setting `s`.

    The terms are the runtime's own storage (`zgen.runtime.unit`): model states
    (a split master's 12 bytes per parameter, or an fp32 master and Adam's two
    moments plus a compute-dtype shard for gathering, or with optimizer offload
    only the compute-dtype shard, none with parameter offload, plus the masters
    and moments of the units a partial offload keeps), gradients (at
    world size 1 with a split master and no accumulation the bf16 gradients
    autograd makes, held as each unit's backward ends; otherwise the fp32 shard,
    allocated at a unit's first backward of the window and kept until the step,
    so it is whole throughout the window's last micro-step when gradients
    accumulate), the units gathered (the plan's replay; none at world size 1,
    where the master's compute-dtype half is the unit's weights, except with
    parameter offload), and the activations: each unit's as it runs forward,
    the loss's peak, then freed unit by unit in backward while a recomputed unit
    holds its activations again during its own.

    What the runtime holds beside those (`zgen.runtime.group`): last step's
    gradients stay until each unit's next gather waits for its update, so
    with one micro-step per update the forward starts with all of them and
    drops each as its unit runs; in backward a unit's gradients from autograd
    (compute dtype, the whole unit) live until its fold has read them and the
    previous unit's until the next fold (`GroupContext.keep_until_read`), and
    the fold allocates the unit's fp32 shard while they do; the root's
    gradients (the output projection's from the loss on, the embedding's at
    the end) are one such set.
    """
    b = compute_bytes(s.precision)
    n = max(1, s.world_size)
    shard = ceil(params / n)
    if s.offload_optimizer:
        states = (0 if s.offload_param else b * shard) + s.kept_states
    elif s.split_master:
        states = 12 * shard
    else:
        low = s.precision != "fp32"
        states = (12 if low else 8 + 4) * shard + (b * shard if (n > 1 and low) else 0)
    held = n == 1 and s.split_master and s.accumulation == 1 and not s.offload_optimizer
    per_grad = 2 if held else 4
    gathers = n > 1 or s.offload_param or (not s.split_master and not s.offload_optimizer and s.precision != "fp32")
    window = 4 * shard if (s.accumulation > 1 and not held) else 0
    pers = persistent * b if n > 1 else 0
    order = [m for m in plan.forward_order if m in units]
    root_acts = sum(u.activations for m, u in units.items() if m == ROOT)
    steps = simulate(plan) if gathers else []
    by_pos = {(st.phase, st.index): st for st in steps}

    def gathered(phase: str, i: int) -> tuple[int, int]:
        st = by_pos.get((phase, i))
        if st is None:
            return 0, 0
        ahead = set(st.issued)
        return (sum(units[m].params for m in st.gathered if m not in ahead and m in units) * b,
                sum(units[m].params for m in ahead if m in units) * b)

    def point(label: str, unit: str, acts: int, grads: int, g: tuple[int, int]) -> MemoryPoint:
        return MemoryPoint(label=label, unit=unit, states=states, persistent=pers, gathered=g[0], inflight=g[1],
                           activations=acts, gradients=grads, buckets=0)

    def grad_of(u: UnitMemory) -> int:
        return per_grad * (u.params if held else ceil(u.params / n))

    points = []
    acts = 0
    seen: set[str] = set()
    # Last step's gradients, each dropped when its unit's forward waits for its update (the root's first).
    stale = 0 if s.accumulation > 1 else sum(grad_of(u) for m, u in units.items() if m != ROOT)
    for i, m in enumerate(plan.forward_order):
        if m not in seen and m != ROOT and m in units:
            seen.add(m)
            acts += units[m].activations
            stale -= 0 if s.accumulation > 1 else grad_of(units[m])
        points.append(point(f"fwd {i}", m, acts, window or stale, gathered("forward", i)))
    acts += root_acts
    points.append(point("loss", ROOT, acts + s.loss_peak, window, gathered("backward", 0)))
    grads = 0
    previous = 0  # the last folded unit's autograd gradients, alive until the next fold
    done: set[str] = set()
    for j, m in enumerate(plan.backward_order):
        if m == ROOT or m not in units or m in done:  # the root's backward starts first and folds last
            points.append(point(f"bwd {j}", m, acts + s.head_grad, window or grads, gathered("backward", j)))
            continue
        u = units[m]
        done.add(m)
        own = u.params * b  # its gradients from autograd: the whole unit, in the compute dtype
        reduce = 0 if n == 1 else u.params * b * 2  # the reduce-scatter's fp32 input
        new = 0 if (held or window) else grad_of(u)  # the fold allocates its fp32 shard
        base = (window or grads) + own + previous
        during = (acts + u.recompute, base)
        acts -= u.activations
        at_fold = (acts, base + reduce + new)
        a, g = max(during, at_fold, key=sum)
        points.append(point(f"bwd {j}", m, a + s.head_grad, g, gathered("backward", j)))
        grads += grad_of(u)
        previous = 0 if held else own
    root = units.get(ROOT)
    if root is not None:  # its gradients (the output projection's among them) and its fp32 shard at its fold
        own = max(root.params * b, s.head_grad)
        reduce = 0 if n == 1 else root.params * b * 2
        new = 0 if (held or window) else grad_of(root)
        points.append(point("bwd root", ROOT, acts, (window or grads) + own + previous + reduce + new,
                            gathered("backward", 0)))
        grads += grad_of(root)
    points.append(point("step", "", 0, max(window, grads) if not held else grads, (0, 0)))
    return points
