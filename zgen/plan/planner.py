"""The planner: from a trace and a ZeRO config to a `Plan` the runtime follows.

Steps, each a small function:

1. `block_modules`: which modules get a unit of their own. By default the
   children of the largest `ModuleList` and of every other, non-nested
   `ModuleList` holding at least a quarter of its parameters (so an
   encoder-decoder gets units for both stacks); `[tool.zgen] units` names
   them instead (fnmatch patterns over qualified module names).
2. `zgen.plan.units.default_units` groups the parameters; parameters at or below
   `stage3_param_persistence_threshold` elements leave their unit and stay
   gathered (DeepSpeed's rule: `numel <= threshold`).
3. Orders come from the trace: unit modules in the order their forward
   started, and in the order their backward started.
4. External parameters: a parameter read while a unit runs (the innermost
   running unit module) that another unit owns is attached to the reader.
5. What stays gathered between forward and backward: a unit is kept when its
   next use comes within `stage3_max_reuse_distance` elements of other units'
   gathers (DeepSpeed's rule, traversing the units that run in between), as
   long as the gathered total stays within `stage3_max_live_parameters`.
6. Prefetch: `zgen.plan.prefetch`, DeepSpeed's bucket and max-live rule
   (the runtime's default plan uses the same one).

`zgen.plan.replay.simulate` replays a plan position by position (what is
gathered, issued and freed); `timeline` turns the replay into per-GPU memory
for the unit table and the memory plot (`zgen.plan.plot`).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass

from torch import nn

from zgen.config.resolved import ZeroSpec
from zgen.errors import ZgenError
from zgen.plan.prefetch import prefetch_lists
from zgen.plan.replay import inside, simulate, spans
from zgen.plan.schedule import ROOT, Plan, Unit
from zgen.plan.trace import ExecutionTrace
from zgen.plan.units import default_units, module_numel

__all__ = ["block_modules", "build_plan", "unit_numel", "crosscheck_notes", "resolved_hazards", "trace_failure_note",
           "MemoryPoint", "timeline"]

# Another ModuleList gets units too when it holds at least this share of the largest one's parameters.
_SECOND_STACK_SHARE = 0.25


# -- 1. which modules are units ------------------------------------------------------------

def block_modules(model: nn.Module, trace: ExecutionTrace, patterns: Sequence[str] = ()) -> list[str]:
    """Qualified names of the modules that get a unit, in the order their forward first ran."""
    names = [n for n, _ in model.named_modules() if n]
    if patterns:
        chosen: list[str] = []
        for pat in patterns:
            hits = [n for n in names if fnmatch.fnmatchcase(n, pat)]
            if not hits:
                raise ZgenError(
                    f"`units` pattern `{pat}` matches no module of the model",
                    help="patterns match qualified module names, e.g. `layers.*` or `encoder.block.*`",
                )
            chosen.extend(h for h in hits if h not in chosen)
    else:
        lists = sorted(
            ((n, module_numel(m)) for n, m in model.named_modules() if isinstance(m, nn.ModuleList) and len(m) > 0),
            key=lambda nm: -nm[1],
        )
        stacks: list[str] = []
        for name, n in lists:
            if not stacks or (
                n >= _SECOND_STACK_SHARE * lists[0][1]
                and not any(inside(name, s) or inside(s, name) for s in stacks)
            ):
                stacks.append(name)
        chosen = [f"{s}.{i}" if s else str(i) for s in stacks for i in range(len(model.get_submodule(s)))]
    first_run = {}
    for i, m in enumerate(trace.forward_calls):
        first_run.setdefault(m, i)
    registration = {n: i for i, n in enumerate(names)}
    return sorted(chosen, key=lambda m: (first_run.get(m, len(trace.forward_calls)), registration.get(m, 0)))


# -- 2-6. the plan -------------------------------------------------------------------------

def unit_numel(plan: Plan, trace: ExecutionTrace) -> dict[str, int]:
    """Elements each unit gathers (its own parameters)."""
    sizes = {p.name: p.numel for p in trace.params}
    return {u.module: sum(sizes[p] for p in u.params) for u in plan.units}


def _innermost_by_name(module: str, units: set[str]) -> str | None:
    """The unit whose module encloses `module` most closely, by qualified name (None if none)."""
    parts = module.split(".") if module else []
    for i in range(len(parts), -1, -1):
        if ".".join(parts[:i]) in units:
            return ".".join(parts[:i])
    return None


def _innermost_unit(stack: Sequence[str], units: set[str]) -> str | None:
    for m in reversed(stack):
        if m in units:
            return m
    return None


def build_plan(
    model: nn.Module,
    trace: ExecutionTrace,
    zero: ZeroSpec,
    *,
    patterns: Sequence[str] = (),
    world_size: int | None = None,
) -> Plan:
    """Compute the stage-3 schedule for a traced meta-device `model` under the ZeRO settings `zero`."""
    blocks = block_modules(model, trace, patterns)
    sizes = {p.name: p.numel for p in trace.params}
    persistent = tuple(p.name for p in trace.params if p.numel <= zero.param_persistence_threshold)
    keep_out = set(persistent)
    grouped = {s.module: s.params for s in default_units(model, blocks)}
    # Blocks without parameters of their own stay candidates: a tied parameter may make them need a unit.
    specs = [(m, tuple(p for p in grouped.get(m, ()) if p not in keep_out)) for m in [*blocks, ROOT]]
    owner = {p: m for m, ps in specs for p in ps}
    external: dict[str, list[str]] = {m: [] for m, _ in specs}
    notes: list[str] = []
    # A tied parameter registered under a module of another unit is external there (the runtime installs it there).
    for info in trace.params:
        for alias in info.aliases:
            holder = _innermost_by_name(alias.rpartition(".")[0], set(external))
            if info.name in owner and holder is not None and holder != owner[info.name] \
                    and info.name not in external[holder]:
                external[holder].append(info.name)
    # A unit that gathers nothing (all its parameters persistent) is not needed -- the root included, as in
    # the runtime's default plan.
    specs = [(m, ps) for m, ps in specs if ps or external[m]]
    unit_names = {m for m, _ in specs}

    forward = tuple(m for m in trace.forward_calls if m in unit_names)
    backward = tuple(m for m in trace.backward_calls if m in unit_names)
    never = [m for m, _ in specs if m not in set(forward)]
    for m in never:
        notes.append(f"unit `{m or '<root>'}` never ran in the traced forward; it is gathered on demand")
    missing_bwd = [m for m in reversed(forward) if m not in backward]
    backward = backward + tuple(dict.fromkeys(missing_bwd))

    for r in trace.reads:
        reader = _innermost_unit(r.stack, unit_names)
        if reader is None or r.param in keep_out:
            continue
        if owner.get(r.param) != reader and r.param not in external[reader]:
            external[reader].append(r.param)
            notes.append(
                f"unit `{reader or '<root>'}` reads `{r.param}` (owned by unit `{owner[r.param] or '<root>'}`) "
                f"at {r.path}:{r.line}; the plan keeps its owner gathered while `{reader or '<root>'}` runs"
            )
    if trace.unused:
        notes.append(f"{len(trace.unused)} parameter(s) were not read in the traced forward: "
                     + ", ".join(f"`{p}`" for p in trace.unused[:5]) + (" ..." if len(trace.unused) > 5 else ""))

    units = [Unit(module=m, params=ps, external=tuple(external[m])) for m, ps in specs]
    numel = {m: sum(sizes[p] for p in ps) for m, ps in specs}
    keep = _kept_units(units, forward, backward, numel, zero)
    for reader, owner_unit in _enclosing_reads(units, forward):
        if owner_unit not in keep:
            keep.add(owner_unit)
            notes.append(f"unit `{owner_unit or '<root>'}` stays gathered from its forward to its backward: "
                         f"unit `{reader or '<root>'}`, whose call encloses it, reads its parameters afterwards")
    units = [Unit(module=u.module, params=u.params, external=u.external, reshard_after_forward=u.module not in keep)
             for u in units]
    draft = Plan(units=tuple(units), forward_order=forward, backward_order=backward, persistent=persistent)
    fwd_pre, bwd_pre = prefetch_lists(draft, numel, zero.prefetch_bucket_size, zero.max_live_parameters)
    big = [m for m in forward if numel[m] > zero.max_live_parameters]
    for m in dict.fromkeys(big):
        notes.append(f"unit `{m or '<root>'}` alone gathers {numel[m]:,} elements, more than "
                     f"stage3_max_live_parameters ({zero.max_live_parameters:,}); it is gathered anyway")
    return Plan(
        units=tuple(units),
        forward_order=forward,
        backward_order=backward,
        forward_prefetch=fwd_pre,
        backward_prefetch=bwd_pre,
        persistent=persistent,
        world_size=world_size,
        notes=tuple(notes),
    )


def _enclosing_reads(units: list[Unit], forward: Sequence[str]) -> list[tuple[str, str]]:
    """(reader, owner) pairs where the reader's call encloses the owner's and reads the owner's parameters.

    The reader is still running when the owner's own call ends, and its
    backward (which comes first) needs the same parameters, so releasing the
    owner after its forward saves nothing that lasts and would pull the
    parameters out from under the running reader.
    """
    owner = {p: u.module for u in units for p in u.params}
    ends = spans(forward)
    out = []
    for u in units:
        for p in u.external:
            o = owner.get(p)
            if o is None or (u.module, o) in out:
                continue
            if any(m == u.module and o in forward[i + 1: ends[i] + 1] for i, m in enumerate(forward)):
                out.append((u.module, o))
    return out


def _kept_units(units: list[Unit], forward, backward, numel: dict[str, int], zero: ZeroSpec) -> set[str]:
    """Units left gathered between their forward and backward (reuse distance, capped by max live)."""
    sequence = list(forward) + list(backward)
    ends = spans(forward)
    release = {m: ends[i] for i, m in enumerate(forward)}  # after its last forward call
    distance: dict[str, int] = {}
    for u in units:
        m = u.module
        if m not in release:
            continue
        traversed = 0
        for other in sequence[release[m] + 1:]:
            if traversed >= zero.max_reuse_distance:
                break
            if other == m:
                distance[m] = traversed
                break
            traversed += numel[other]
    keep: set[str] = set()
    for m in sorted(distance, key=lambda k: (distance[k], sequence.index(k))):
        trial = keep | {m}
        if _peak_live(units, forward, backward, numel, trial) <= zero.max_live_parameters:
            keep = trial
    return keep


def _peak_live(units, forward, backward, numel, keep: set[str]) -> int:
    plan = Plan(
        units=tuple(Unit(module=u.module, params=u.params, external=u.external,
                         reshard_after_forward=u.module not in keep) for u in units),
        forward_order=tuple(forward),
        backward_order=tuple(backward),
    )
    return max((sum(numel[m] for m in s.gathered) for s in simulate(plan)), default=0)


# -- memory timeline ----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class MemoryPoint:
    """Per-GPU bytes while one unit runs, split the way `zgen plan` prints and plots them."""

    label: str  # "fwd 3" / "bwd 3"
    unit: str
    states: int  # model states (sharded parameters, gradients, optimizer) from the memory model
    persistent: int  # persistent parameters, gathered all step
    gathered: int  # full parameters of units gathered and running or waiting
    inflight: int  # full parameters of units whose all-gather this position issued ahead of use
    activations: int  # saved activations at this point (the memory model's estimate, spread over the units)
    gradients: int  # the running unit's full gradient before its reduce-scatter (backward only)

    @property
    def total(self) -> int:
        return self.states + self.persistent + self.gathered + self.inflight + self.activations + self.gradients


def timeline(plan: Plan, trace: ExecutionTrace, resolved, shape, *, seq_len: int, world_size: int) -> list[MemoryPoint]:
    """Per-GPU memory at every position of one step, using the shared memory model (`zgen.memory`).

    Model states and activations come from `zgen.memory` (the formulas
    `zgen check` uses); the plan says when each part is live. Gathered and
    in-flight units are their elements times the compute dtype's bytes. The
    layers' activations grow evenly over the forward's unit positions after
    the root's and shrink the same way in backward; the logits exist from the
    end of the forward until the root's backward.
    """
    from dataclasses import replace as _replace

    from zgen import memory

    z = resolved.zero
    per = memory.compute_bytes(resolved.precision)
    numel = unit_numel(plan, trace)
    sizes = {p.name: p.numel for p in trace.params}
    states = sum(i.bytes for i in memory.model_states(
        trace.total_params, world_size, z.stage, resolved.precision,
        offload_param=z.offload_param.device != "none", offload_optimizer=z.offload_optimizer.device != "none",
    ))
    micro = resolved.train_micro_batch_size_per_gpu
    act_total = memory.activation_bytes(shape, micro, seq_len, resolved.precision)
    act_layers = memory.activation_bytes(_replace(shape, vocab=None), micro, seq_len, resolved.precision)
    logits = act_total - act_layers
    persistent = sum(sizes[p] for p in plan.persistent) * per
    steps = simulate(plan)
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
            persistent=persistent,
            gathered=sum(numel[m] for m in s.gathered if m not in ahead) * per,
            inflight=sum(numel[m] for m in ahead) * per,
            activations=acts,
            gradients=grads,
        ))
    return points


# -- cross-check with the static findings -----------------------------------------------------

@dataclass(frozen=True, slots=True)
class _Match:
    """A source line where the static check, the trace, or both saw a read of another module's parameter."""

    path: str
    line: int
    finding: object | None  # the static ZG3xx Finding
    read: object | None  # the trace's ParamRead
    attached_to: str | None  # the unit the plan attaches the parameter to, if it had to


def _matches(trace: ExecutionTrace, plan: Plan, static: Sequence, root, static_root) -> list[_Match]:
    from pathlib import Path

    def key(path: str, line: int, base) -> tuple[str, int]:
        p = Path(path)
        return (str((p if p.is_absolute() else Path(base) / p).resolve()), line)

    classes = dict(trace.modules)
    units = {u.module: u for u in plan.units}
    static3 = {key(f.path, f.line, static_root): f for f in static if f.code.startswith("ZG3")}
    seen: dict[tuple[str, int], object] = {}
    for r in trace.external_reads():
        # torch's own modules reading their children (`MultiheadAttention` and `out_proj.weight`) are not user code
        if r.path == "<unknown>" or classes.get(r.module, "").startswith("torch."):
            continue
        seen.setdefault(key(r.path, r.line, root), r)
    out = []
    for k in sorted(set(seen) | set(static3)):
        r, f = seen.get(k), static3.get(k)
        attached = None
        if r is not None:
            reader = _innermost_unit(r.stack, set(units))
            if reader is not None and r.param in units[reader].external:
                attached = reader
        path, line = (r.path, r.line) if r is not None else (f.path, f.line)
        out.append(_Match(path, line, f, r, attached))
    return out


def crosscheck_notes(trace: ExecutionTrace, plan: Plan, static: Sequence, root, static_root=None) -> list[str]:
    """Where the trace and the static ZG3xx findings agree or disagree, one sentence each.

    The trace's paths are relative to `root` (the project), the findings'
    paths to `static_root` (the working directory `zgen check` ran in;
    default `root`).
    """
    owner = plan.owner_of()
    notes = []
    for m in _matches(trace, plan, static, root, static_root or root):
        r, f = m.read, m.finding
        if r is None:
            notes.append(f"{f.path}:{f.line}: static only: {f.code} was not observed by the trace "
                         "(the code path did not run with these inputs, or it reads no parameter)")
            continue
        verdict = (f"the plan attaches it to unit `{m.attached_to or '<root>'}`" if m.attached_to is not None
                   else "it is in the reader's own unit or persistent: harmless for zgen's runtime")
        if f is not None:
            notes.append(f"{m.path}:{m.line}: agree: {f.code} and the trace both see module "
                         f"`{r.module or '<root>'}` read `{r.param}`; {verdict}")
        else:
            own = owner.get(r.param)
            notes.append(f"{m.path}:{m.line}: trace only: module `{r.module or '<root>'}` reads `{r.param}` "
                         f"(unit `{'<persistent>' if own is None else (own or '<root>')}`), which the static "
                         f"check did not flag; {verdict}")
    return notes


def resolved_hazards(trace: ExecutionTrace, plan: Plan, static: Sequence, root, static_root=None) -> tuple[list[str], set]:
    """Static ZG3xx findings the trace confirmed and the plan makes safe for zgen's runtime.

    Returns banner lines and the `(path, line, code)` of those findings, which
    then do not block `zgen emit`. A finding the trace did not observe stays
    an error: nothing shows the plan covers it.
    """
    lines, keys = [], set()
    for m in _matches(trace, plan, static, root, static_root or root):
        if m.finding is None or m.read is None:
            continue
        f, r = m.finding, m.read
        how = (f"the plan keeps `{r.param}` gathered while unit `{m.attached_to or '<root>'}` runs"
               if m.attached_to is not None else f"`{r.param}` is gathered with the unit that reads it")
        lines.append(f"{f.path}:{f.line}: {f.code} {f.message} -> {how}")
        keys.add((f.path, f.line, f.code))
    return lines, keys


def trace_failure_note(finding, static: Sequence, root, static_root=None) -> str:
    """Whether the static check also flagged where the trace stopped: a ZG2xx on that line, or within 5 lines."""
    from pathlib import Path

    def where(path: str, base) -> str:
        p = Path(path)
        return str((p if p.is_absolute() else Path(base) / p).resolve())

    here = where(finding.path, root)
    near = sorted((abs(f.line - finding.line), f.line, f.code) for f in static
                  if f.code.startswith("ZG2") and where(f.path, static_root or root) == here
                  and abs(f.line - finding.line) <= 5)
    if near and near[0][0] == 0:
        return f"{finding.path}:{finding.line}: agree: the static check reports {near[0][2]} on this line"
    if near:
        return (f"{finding.path}:{finding.line}: agree: the static check reports {near[0][2]} nearby "
                f"(line {near[0][1]})")
    return (f"{finding.path}:{finding.line}: trace only: the static check did not flag this code "
            "(the data dependence is not visible in the source's shape)")
