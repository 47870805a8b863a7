"""`zgen plan --auto`: the fastest setting that fits a memory budget, chosen without running anything on a GPU.

Candidates are every combination of

* the micro batch: each divisor of the sequences one rank takes per optimizer
  step (`train_batch_size` / world size), the rest made up by gradient
  accumulation;
* which units are recomputed in backward (`Unit.recompute`): none, then one
  more at a time in the order that saves the most memory per second of
  recomputation (for a stack of equal blocks: forward order), up to all;
* the fused output projection and loss (`Plan.head_loss`), where the trace's
  probe (`zgen.plan.trace.fused_heads`) showed the model's loss reads the
  projection's logits in a way the runtime can fuse;
* optimizer offload, and parameter offload on top of it; with optimizer
  offload alone, also the partial offload that keeps on the GPU the optimizer
  of as many of the units stepped first as the budget leaves room for
  (`offload_optimizer.ratio`, `zgen.zero_policy.optimizer_on_device`);
* at world sizes above 1, the plan's units kept gathered from forward to
  backward (the config's reuse distance), or none.

Each candidate's step comes from the trace's work per unit (`zgen.plan.costs`)
at the device's rates (`zgen.steptime`), its peak from the memory model
(`zgen.memory.setting_timeline`). The fastest whose peak is within the budget
less the margin wins; `lines` prints the best candidates and, per choice the
winner did not make, what the best candidate making it costs or why it does
not fit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from math import ceil

from zgen.commcost import step_comm
from zgen.errors import ZgenError
from zgen.memory import MemoryPoint, Setting, UnitMemory, compute_bytes, setting_timeline
from zgen.plan.costs import ModuleCost
from zgen.plan.plot import human_bytes
from zgen.schedule.plan import ROOT, Plan, Unit
from zgen.settings import format_memory
from zgen.schedule.units import innermost
from zgen.steptime import H200, Rates, StepTime, Work, step_time
from zgen.zero_policy import optimizer_on_device, ratio_keeping

__all__ = ["UnitWork", "Candidate", "Scored", "AutoResult", "unit_work", "search", "apply", "lines",
           "DEFAULT_MARGIN"]

# The share of the budget left free. On one H200 (bench/NOTES.md, issue 21) the memory model's peaks came out
# 2-4% under the measured allocated peak for the 1B shape at seq 8192 (more at larger micro batches), and the
# allocator's reserve, which a budget caps, was 0.5-1.6 GiB above that: with 5% two settings predicted to
# fit 40 GiB ran out of memory there (run a), so the default leaves 10%. For the 8B-shaped settings with offload
# (run d) the model is 2.3% under and the reserve 2.4-4.3 GiB above the allocated peak: at 40 GiB that leaves
# 0.3-0.6 GiB of the cap unused.
DEFAULT_MARGIN = 0.10


@dataclass(frozen=True, slots=True)
class UnitWork:
    """One unit's forward for one sample: its own modules' costs summed, its parameters (elements)."""

    module: str
    params: int
    gemm_flops: int
    attention_flops: int
    pointwise_bytes: int
    saved: int
    saved_compiled: int
    inputs: int
    compiled: bool  # engine.compile() compiles it (a unit holding no other unit, not the root)


def unit_work(plan: Plan, costs: Sequence[ModuleCost], numel: Mapping[str, int], batch_size: int) -> tuple[dict[str, UnitWork], int, int]:
    """Per-unit work (per sample) and the loss's logit elements and saved bytes (per sample)."""
    names = {u.module for u in plan.units} | {ROOT}
    sums: dict[str, list[int]] = {m: [0] * 6 for m in names}
    logits = loss_saved = 0
    for c in costs:
        m = innermost(c.module, names) or ROOT
        s = sums[m]
        for i, v in enumerate((c.gemm_flops, c.attention_flops, c.pointwise_bytes, c.saved, c.saved_compiled)):
            s[i] += v
        if c.module == m:
            s[5] += c.inputs
            s[4] += c.compiled_inputs  # a compiled unit keeps what it cannot recompute (zgen.plan.costs)
        logits += c.loss_elements
        loss_saved += c.loss_saved
    units = [u.module for u in plan.units]
    out = {}
    for m, s in sums.items():
        leaf = m != ROOT and not any(o != m and (o.startswith(m + ".")) for o in units)
        out[m] = UnitWork(m, numel.get(m, 0), *(v // batch_size for v in s), compiled=leaf)
    return out, logits // batch_size, loss_saved // batch_size


@dataclass(frozen=True, slots=True)
class Candidate:
    """One setting the search weighs."""

    micro_batch: int
    accumulation: int
    recompute: tuple[str, ...]
    head_loss: str | None
    offload_optimizer: bool
    offload_param: bool
    keep_gathered: bool = True
    kept_units: int = 0  # partial optimizer offload: the first units stepped keep their optimizer on the GPU
    kept_params: int = 0  # their parameters (all ranks)
    offload_ratio: float = 1.0  # the `offload_optimizer.ratio` that keeps them

    def describe(self, blocks: int) -> str:
        rec = (f"recompute {len(self.recompute)}/{blocks}" if self.recompute else "no recompute")
        off = ("offload opt+param" if self.offload_param else "offload opt" if self.offload_optimizer else "")
        if self.kept_units:
            off += f" {self.offload_ratio:.0%} ({self.kept_units} units' optimizer on the GPU)"
        parts = [f"mb {self.micro_batch} x{self.accumulation}", rec, "fused loss" if self.head_loss else "plain loss"]
        return ", ".join(parts + ([off] if off else []) + ([] if self.keep_gathered else ["free after forward"]))


@dataclass(frozen=True, slots=True)
class Scored:
    """A candidate with its predicted step and peak."""

    candidate: Candidate
    step: StepTime
    peak: MemoryPoint
    tokens: int  # tokens per optimizer step over all ranks
    fits: bool
    points: tuple[MemoryPoint, ...] = ()  # the memory timeline the peak is the highest point of

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.step.total


@dataclass(frozen=True, slots=True)
class AutoResult:
    """The search: every candidate scored (fastest first), the budget and margin, the chosen one."""

    scored: tuple[Scored, ...]
    budget: int
    margin: float
    rates: Rates
    blocks: int
    compiled: bool

    @property
    def fitting(self) -> list[Scored]:
        """The settings that fit, fastest first, each with no more recomputation than it needs to fit.

        Recomputing a unit more than a setting needs only adds time, so of the
        candidates that differ only in how many units they recompute, the one
        recomputing the fewest that still fits stands for them all.
        """
        seen, out = set(), []
        for s in self.scored:
            c = s.candidate
            key = (c.micro_batch, c.head_loss, c.offload_optimizer, c.offload_param, c.keep_gathered, c.kept_units > 0)
            if s.fits and key not in seen:
                seen.add(key)
                out.append(s)
        return sorted(out, key=_order)

    @property
    def best(self) -> Scored:
        return self.fitting[0]


def _order(s: Scored) -> tuple[float, int, int, float, float]:
    """Fastest first; at an equal step to three significant digits (inside the model's error: a communication-bound
    step, or a host update hidden under the backward), the one offloading less, then recomputing fewer units, then
    the smaller peak, then the exact step."""
    c = s.candidate
    return (float(f"{s.step.total:.3g}"), c.offload_optimizer + c.offload_param, len(c.recompute), s.peak.total,
            s.step.total)


def _forward_seconds(w: UnitWork, rates: Rates) -> float:
    """One forward of a unit's own work at `rates`: its GEMMs, attention and pointwise bytes."""
    return w.gemm_flops / rates.gemm_flops + w.attention_flops / rates.attention_flops + w.pointwise_bytes / rates.hbm_bytes


def _recompute_order(work: Mapping[str, UnitWork], order: Sequence[str], mb: int, compiled: bool,
                     rates: Rates) -> list[str]:
    """Units to recompute, one more at a time: the most memory saved per second of recomputation first."""
    def gain(m: str) -> float:
        w = work[m]
        kept = w.saved_compiled if (compiled and w.compiled) else w.saved
        return (kept - w.inputs) / (_forward_seconds(w, rates) or 1e-12)
    blocks = [m for m in dict.fromkeys(order) if m != ROOT and m in work]
    return sorted(blocks, key=lambda m: (-float(f"{gain(m):.3g}"), blocks.index(m)))  # equal blocks: forward order


def _no_keep(plan: Plan) -> Plan:
    units = tuple(replace(u, reshard_after_forward=True) if u.module != ROOT else u for u in plan.units)
    return replace(plan, units=units)


def search(plan: Plan, costs: Sequence[ModuleCost], numel: Mapping[str, int], *, trace_batch: int, params: int,
           persistent: int, train_batch_size: int, world_size: int, seq_len: int, precision: str, adam: bool,
           budget: int, margin: float = DEFAULT_MARGIN, rates: Rates = H200, heads: Sequence[str] = (),
           compiled: bool = True, vocab_hidden: tuple[int, int] | None = None, clipping: bool = False) -> AutoResult:
    """Score every candidate (see the module docstring); `heads` are the fusable projections the probe found.

    `clipping`: the config clips by the global gradient norm, so offloaded updates wait for the
    whole backward (`zgen.runtime.step`); without it (and without fp16) they start during it.
    """
    if budget > rates.memory_bytes:
        raise ZgenError(f"--gpu-mem {human_bytes(budget)} is more than the {rates.name}'s {human_bytes(rates.memory_bytes)}",
                        help=f"give a budget of at most {human_bytes(rates.memory_bytes)}, or state the device's "
                             "rates for another GPU")
    work, logits, loss_saved = unit_work(plan, costs, numel, trace_batch)
    per_rank = train_batch_size // world_size if train_batch_size % world_size == 0 else 0
    if per_rank < 1:
        raise ZgenError(f"train_batch_size {train_batch_size} is not a multiple of the world size {world_size}",
                        help="give a world size that divides the global batch")
    b = compute_bytes(precision)
    order = [m for m in plan.forward_order if m in work]
    blocks = len({m for m in order if m != ROOT})
    head_options: list[str | None] = [None] + list(heads[:1])
    keep_options = [True, False] if world_size > 1 and any(not u.reshard_after_forward for u in plan.units
                                                           if u.module != ROOT) else [True]
    offloads = [(False, False), (True, False), (True, True)]
    # The optimizer's order (`zgen.runtime.step.step_order`): the persistent pseudo-unit, then forward order.
    stepped = ([("<persistent>", persistent)] if persistent else []) + [(m, work[m].params) for m in dict.fromkeys(order)
                                                                       if m in work]
    scored = []
    for mb in [d for d in range(1, per_rank + 1) if per_rank % d == 0]:
        accum = per_rank // mb
        rec_order = _recompute_order(work, order, mb, compiled, rates)
        for k in range(len(rec_order) + 1):
            rec = tuple(rec_order[:k])
            for head in head_options:
                for off_opt, off_par in offloads:
                    for keep in keep_options:
                        c = Candidate(mb, accum, rec, head, off_opt, off_par, keep)
                        args = (plan if keep else _no_keep(plan), work, logits, loss_saved, params, persistent,
                                world_size, seq_len, precision, adam, b, rates, compiled, vocab_hidden,
                                budget * (1 - margin), not clipping and precision != "fp16")
                        whole = _score(c, *args)
                        scored.append(whole)
                        if off_opt and not off_par and adam:
                            partial = _keep_on_device(c, whole, stepped, world_size, budget * (1 - margin))
                            if partial is not None:
                                scored.append(_score(partial, *args))
    result = AutoResult(tuple(sorted(scored, key=_order)), budget, margin, rates,
                        blocks, compiled)
    if not result.fitting:
        raise no_fit_error(result)
    return result


def _keep_on_device(c: Candidate, whole: Scored, stepped: Sequence[tuple[str, int]], world: int,
                    limit: float) -> Candidate | None:
    """`c` keeping on the GPU the optimizer (fp32 master and two moments, 12 bytes per parameter) of the units the
    room beside `whole`'s peak (which it adds to at every point) holds, taken as the runtime takes them
    (`zgen.zero_policy.optimizer_on_device`: the units stepped first that fit); None if none does, or all would."""
    total = sum(n for _, n in stepped)
    room = int((limit - whole.peak.total) / 12) * world
    kept = optimizer_on_device(stepped, 1.0 - min(room, total) / total) if room > 0 and total else frozenset()
    if not kept or len(kept) == len(stepped):
        return None
    params = sum(n for label, n in stepped if label in kept)
    return replace(c, kept_units=len(kept), kept_params=params, offload_ratio=ratio_keeping(stepped, sorted(kept)))


def _score(c: Candidate, plan: Plan, work: Mapping[str, UnitWork], logits: int, loss_saved: int, params: int,
           persistent: int, world: int, seq_len: int, precision: str, adam: bool, b: int, rates: Rates,
           compiled: bool, vocab_hidden: tuple[int, int] | None, limit: float, early: bool = False) -> Scored:
    mb = c.micro_batch
    rec = set(c.recompute)
    split = precision == "bf16" and adam and not c.offload_optimizer
    on_gpu = ceil(c.kept_params / world)  # this rank's parameters whose optimizer a partial offload keeps on the GPU
    units = {}
    for m, w in work.items():
        kept = w.saved_compiled if (compiled and w.compiled) else w.saved
        if m in rec:
            units[m] = UnitMemory(m, w.params, w.inputs * mb, kept * mb)
        else:
            units[m] = UnitMemory(m, w.params, kept * mb)
    vocab, hidden = vocab_hidden or (0, 0)
    head_grad = vocab * hidden * b if vocab else 0
    if c.head_loss and vocab:
        rows = logits * mb // vocab
        # zgen.runtime.head_loss: chunks of rows whose fp32 logits take 1 GiB (its CHUNK_BYTES). It holds the hidden
        # states' gradient (all rows) and the head's fp32 weight gradient throughout; in its forward, per chunk, the
        # logits, the fp32 upcast inductor materialises (the 1 GiB) and the logits' gradient; in its backward, once
        # the chunks are gone, the weight gradient cast to the compute dtype (the head's gradient from then on)
        # and the hidden gradient's fp32 scaling and its cast back.
        chunk = min(rows, max(1, (1 << 30) // (4 * vocab)))
        loss_peak = (rows * hidden * b + vocab * hidden * 4
                     + max(chunk * vocab * (2 * b + 4), head_grad + rows * hidden * (4 + b)))
    else:  # the logits' gradients, then the projection's weight gradient beside them
        loss_peak = 3 * loss_saved * mb + head_grad
    setting = Setting(world_size=world, precision=precision, accumulation=c.accumulation, split_master=split,
                      offload_optimizer=c.offload_optimizer, offload_param=c.offload_param, loss_peak=loss_peak,
                      head_grad=head_grad, kept_states=12 * on_gpu)
    points = setting_timeline(plan, units, params, persistent, setting)
    peak = max(points, key=lambda p: p.total)
    shard = ceil(params / world)
    held = world == 1 and split and c.accumulation == 1
    if held:
        fold = 0.0  # the optimizer reads autograd's bf16 gradients as they are
    elif world == 1:  # bf16 gradients into the fp32 shard: written once, then read and written per micro-step
        fold = shard * (6 + 10 * (c.accumulation - 1)) / c.accumulation
    else:  # the reduce-scatter's fp32 input from the bf16 gradients, then into the shard
        fold = 6 * params + 8 * shard
    comm = 0.0
    if world > 1:
        kept_units = sum(1 for u in plan.units if not u.reshard_after_forward)
        comm = step_comm(params, world, "flat", units=max(1, len(plan.units)), micro_steps=1, param_bytes=b).seconds
        if kept_units:  # a kept unit's backward gather is saved
            comm *= 1 - kept_units / max(1, len(plan.units)) / 3
    ws = work.values()
    w = Work(
        gemm_flops=mb * sum(x.gemm_flops for x in ws),
        attention_flops=mb * sum(x.attention_flops for x in ws),
        recompute_gemm_flops=mb * sum(work[m].gemm_flops for m in rec),
        recompute_attention_flops=mb * sum(work[m].attention_flops for m in rec),
        eager_pointwise_bytes=mb * sum(x.pointwise_bytes for x in ws if not (compiled and x.compiled)),
        compiled_pointwise_bytes=mb * sum(x.pointwise_bytes for x in ws if compiled and x.compiled),
        recompute_pointwise_bytes=mb * sum(work[m].pointwise_bytes for m in rec),
        recompute_compiled=compiled,
        logits=mb * logits,
        fused_loss=bool(c.head_loss),
        micro_steps=c.accumulation,
        params=shard,
        fold_bytes=fold,
        comm_seconds=comm,
        param_copy_bytes=2 * b * params if c.offload_param else 0.0,
        offload_optimizer=c.offload_optimizer,
        split_master=split,
        grad_copy_bytes=4 * (shard - on_gpu) if c.offload_optimizer else 0.0,
        weight_copy_bytes=b * (shard - on_gpu) if c.offload_optimizer and not c.offload_param else 0.0,
        largest_unit=max((x.params for x in ws), default=0) / max(1, params),
        early_update=c.offload_optimizer and early,
        kept_params=on_gpu,
        **_grad_shares(plan, work, logits, bool(c.head_loss), params, persistent, rates),
    )
    tokens = mb * c.accumulation * world * seq_len
    return Scored(c, step_time(w, rates), peak, tokens, peak.total <= limit, tuple(points))


def _grad_shares(plan: Plan, work: Mapping[str, UnitWork], logits: int, fused_loss: bool, params: int,
                 persistent: int, rates: Rates) -> dict[str, float]:
    """`first_grad` and `last_grad` of `zgen.steptime.Work`: the backward runs the loss, the root's own code (the
    head) and the last unit before a unit's gradient is final; the root's and the persistent parameters' gradients
    are final only at its end (the embedding's is among them)."""
    loss = logits * (rates.fused_loss_bytes if fused_loss else rates.plain_loss_bytes) / rates.hbm_bytes
    total = sum(_forward_seconds(x, rates) for x in work.values()) + loss
    units = [m for m in plan.forward_order if m in work and m != ROOT]
    root = work.get(ROOT)
    first = (loss + (_forward_seconds(root, rates) if root else 0.0)
             + (_forward_seconds(work[units[-1]], rates) if units else 0.0))
    last = (root.params if root else 0) + persistent
    return {"first_grad": min(1.0, first / total) if total > 0 else 1.0, "last_grad": min(1.0, last / max(1, params))}


def apply(plan: Plan, result: AutoResult, chosen: Scored | None = None) -> Plan:
    """`plan` with the chosen candidate's recomputation, fused loss and kept units, and its setting recorded."""
    s = chosen or result.best
    c = s.candidate
    units = tuple(replace(u, recompute=u.module in c.recompute) for u in (plan if c.keep_gathered else _no_keep(plan)).units)
    return replace(plan, units=units, head_loss=c.head_loss, setting=summary(s, result))


def summary(s: Scored, result: AutoResult) -> str:
    """One line: the setting, its predicted step, throughput and peak against the budget."""
    return (f"{s.candidate.describe(result.blocks)}: predicted {s.step.total * 1e3:.1f} ms per step, "
            f"{s.tokens_per_s:,.0f} tokens/s, peak {human_bytes(s.peak.total)} of {human_bytes(result.budget)} "
            f"({result.margin:.0%} margin, {result.rates.name} rates)")


def no_fit_error(result: AutoResult) -> ZgenError:
    """Nothing fits: the smallest peak any candidate has, and the budget it would need."""
    low = min(result.scored, key=lambda s: s.peak.total)
    need = low.peak.total / (1 - result.margin)
    return ZgenError(f"no setting fits in {human_bytes(result.budget)} per GPU: the smallest peak is "
                     f"{human_bytes(low.peak.total)} ({low.candidate.describe(result.blocks)})",
                     help=f"give --gpu-mem {format_memory(ceil(need), round_up=True)} or more ({result.margin:.0%} margin), or more GPUs")


def lines(result: AutoResult, top: int = 5) -> list[str]:
    """The table of the best candidates that fit, then why the others lose."""
    fit = result.fitting
    best = fit[0]
    limit = result.budget * (1 - result.margin)
    out = [f"auto: {len(result.scored)} settings weighed for {human_bytes(result.budget)} per GPU "
           f"({human_bytes(limit)} after the {result.margin:.0%} margin), {result.rates.name} rates "
           f"(GEMM {result.rates.gemm_flops / 1e12:.0f}, attention {result.rates.attention_flops / 1e12:.0f} TFLOP/s, "
           f"HBM {result.rates.hbm_bytes / 1e12:.1f} TB/s), units {'compiled' if result.compiled else 'eager'}"]
    rows = [("#", "setting", "step", "tokens/s", "peak")]
    for i, s in enumerate(fit[:top], 1):
        rows.append((str(i), s.candidate.describe(result.blocks), f"{s.step.total * 1e3:.1f} ms",
                     f"{s.tokens_per_s:,.0f}", human_bytes(s.peak.total)))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for r in rows:
        out.append("  " + "  ".join(c.rjust(w) if i in (0, 2, 3, 4) else c.ljust(w)
                                    for i, (c, w) in enumerate(zip(r, widths))).rstrip())
    out.append(f"chosen: {summary(best, result)}")
    out.append("why the others lose:")
    out.extend("  " + line for line in _reasons(result, best, limit))
    return out


def _reasons(result: AutoResult, best: Scored, limit: float) -> list[str]:
    """Per choice the winner did not make: the best candidate making it, and its cost or its excess memory."""
    c = best.candidate
    groups = [
        ("a larger micro batch", lambda x: x.micro_batch > c.micro_batch),
        ("a smaller micro batch", lambda x: x.micro_batch < c.micro_batch),
        ("more recomputation", lambda x: len(x.recompute) > len(c.recompute)),
        ("less recomputation", lambda x: len(x.recompute) < len(c.recompute)),
        ("the model's own loss" if c.head_loss else "the fused loss", lambda x: (x.head_loss is None) != (c.head_loss is None)),
        ("optimizer offload", lambda x: x.offload_optimizer and not c.offload_optimizer),
        ("no optimizer offload", lambda x: c.offload_optimizer and not x.offload_optimizer),
        ("parameter offload", lambda x: x.offload_param and not c.offload_param),
        ("the optimizer partly on the GPU", lambda x: x.kept_units > 0 and not c.kept_units),
        ("the whole optimizer offloaded", lambda x: x.offload_optimizer and not x.kept_units and c.kept_units > 0),
        ("units freed after forward" if c.keep_gathered else "units kept gathered",
         lambda x: x.keep_gathered != c.keep_gathered),
    ]
    out = []
    for what, pred in groups:
        alts = [s for s in result.scored if pred(s.candidate)]
        if not alts:
            continue
        fitting = [s for s in alts if s.fits]
        if fitting:
            s = fitting[0]
            out.append(f"{what}: at best {s.step.total * 1e3:.1f} ms (+{(s.step.total / best.step.total - 1):.1%}), "
                       f"{s.candidate.describe(result.blocks)}")
        else:
            s = min(alts, key=lambda x: x.peak.total)
            out.append(f"{what}: does not fit, at least {human_bytes(s.peak.total)} > {human_bytes(limit)} "
                       f"({s.candidate.describe(result.blocks)})")
    return out
