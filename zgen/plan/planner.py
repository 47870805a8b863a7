"""The planner: from a trace and a ZeRO config to a `Plan` the runtime follows.

Steps, each a small function:

1. `block_modules`: which modules get a unit of their own: the repeated
   blocks of the model's stacks (`zgen.schedule.units`, the rule the runtime's
   default plan uses too), or the modules `[tool.zgen] units` / `--units`
   patterns name.
2. `zgen.schedule.grouping.group` (the core the runtime's default plan calls
   too) groups the parameters: parameters at or below
   `stage3_param_persistence_threshold` elements stay gathered (DeepSpeed's
   rule: `numel <= threshold`), a tied parameter registered inside another
   unit is external there.
3. Orders come from the trace: unit modules in the order their forward
   started, and in the order their backward started.
4. External parameters: a parameter read while a unit runs (the innermost
   running unit module) that another unit owns is attached to the reader.
5. What stays gathered between forward and backward: a unit is kept when its
   next use comes within `stage3_max_reuse_distance` elements of other units'
   gathers (DeepSpeed's rule, traversing the units that run in between), as
   long as the gathered total stays within `stage3_max_live_parameters`.
6. Prefetch: `zgen.schedule.prefetch`, DeepSpeed's bucket and max-live rule
   (the runtime's default plan uses the same one).

`zgen.schedule.replay.simulate` replays a plan position by position (what is
gathered, issued and freed); `timeline` turns the replay into per-GPU memory
for the unit table and the memory plot (`zgen.plan.plot`).
"""

from __future__ import annotations

from collections.abc import Sequence
import os
from pathlib import Path
from dataclasses import dataclass, replace

from torch import nn

from zgen.config.resolved import ZeroSpec
from zgen.memory import MemoryPoint, step_timeline
from zgen.plan.trace import ExecutionTrace
from zgen.schedule import units as units_rule
from zgen.schedule.grouping import group
from zgen.schedule.plan import Plan, Unit
from zgen.schedule.prefetch import prefetch_lists
from zgen.schedule.replay import spans
from zgen.schedule.retention import kept_units

__all__ = ["block_modules", "build_plan", "unit_numel", "crosscheck_notes", "resolved_hazards", "honoured_build_findings", "BUILD_TIME_CODES",
           "trace_failure_note",
           "timeline"]


# -- 1. which modules are units ------------------------------------------------------------

def block_modules(model: nn.Module, trace: ExecutionTrace, patterns: Sequence[str] = ()) -> list[str]:
    """Qualified names of the modules that get a unit (`zgen.schedule.units`), in the order their forward first ran."""
    chosen = units_rule.block_modules(model, patterns)
    first_run = {}
    for i, m in enumerate(trace.forward_calls):
        first_run.setdefault(m, i)
    registration = {n: i for i, (n, _) in enumerate(model.named_modules())}
    return sorted(chosen, key=lambda m: (first_run.get(m, len(trace.forward_calls)), registration.get(m, 0)))


# -- 2-6. the plan -------------------------------------------------------------------------

def unit_numel(plan: Plan, trace: ExecutionTrace) -> dict[str, int]:
    """Elements each unit gathers (its own parameters)."""
    sizes = {p.name: p.numel for p in trace.params}
    return {u.module: sum(sizes[p] for p in u.params) for u in plan.units}


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
    sizes = {p.name: p.numel for p in trace.params}
    grouping = group(trace.params, block_modules(model, trace, patterns), zero.param_persistence_threshold)
    persistent = grouping.persistent
    keep_out = set(persistent)
    specs = [(u.module, u.params) for u in grouping.units]
    owner = {p: m for m, ps in specs for p in ps}
    external = {u.module: list(u.external) for u in grouping.units}  # tied parameters; the trace's reads follow
    notes: list[str] = []
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

    if not specs and trace.params:
        notes.append(_no_units_note(trace, zero))
    units = [Unit(module=m, params=ps, external=tuple(external[m])) for m, ps in specs]
    numel = {m: sum(sizes[p] for p in ps) for m, ps in specs}
    keep = kept_units(units, forward, backward, numel, zero.max_reuse_distance, zero.max_live_parameters)
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


def _no_units_note(trace: ExecutionTrace, zero: ZeroSpec) -> str:
    """Why a plan has no units, and what to change to get them."""
    largest = max(p.numel for p in trace.params)
    return (f"0 units: all {len(trace.params)} parameters (the largest has {largest:,} elements) are at or below "
            f"`stage3_param_persistence_threshold` ({zero.param_persistence_threshold:,}), so each stays gathered "
            "on every rank for the whole step and nothing is gathered or freed per unit; to shard them, set "
            f"`zero_optimization.stage3_param_persistence_threshold` below {largest:,} (0 shards every parameter)")


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


# -- memory timeline ----------------------------------------------------------------------------

def timeline(plan: Plan, trace: ExecutionTrace, resolved, shape) -> list[MemoryPoint]:
    """Per-GPU memory at every position of one step under `plan`, by the memory model (`zgen.memory`).

    The same composition `zgen check` applies to a plan it draws from the
    model's shape alone, so the two agree wherever the shape describes the model.
    """
    sizes = {p.name: p.numel for p in trace.params}
    return step_timeline(plan, unit_numel(plan, trace), sum(sizes[p] for p in plan.persistent), resolved,
                         replace(shape, params=trace.total_params))


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


# Build-time parameter accesses: hazards under DeepSpeed's `zero.Init`, which partitions each module as its
# constructor returns; zgen's runtime replays the whole constructor on the real weights instead.
BUILD_TIME_CODES = frozenset({"ZG101", "ZG102", "ZG103", "ZG104", "ZG105", "ZG109", "ZG110"})


def honoured_build_findings(static: Sequence, build_lines: frozenset, root) -> tuple[list[str], set]:
    """Static ZG1xx findings on code that ran while the factory built the model: zgen's runtime gets them right.

    Under DeepSpeed's `zero.Init` a parent that initialises, sizes, copies or
    re-parametrises a child its constructor already built works on an empty
    placeholder. zgen's runtime records the whole constructor on deferred
    tensors and replays it on the real weights (`zgen.runtime.deferred`), so
    each such write lands exactly as in a plain build. `build_lines` are the
    (real path, line) pairs that ran during the build (`Prepared.build_lines`).
    Returns banner lines and finding keys, like `resolved_hazards`.
    """
    lines, keys = [], set()
    for f in static:
        if f.code not in BUILD_TIME_CODES:
            continue
        path = os.path.realpath(f.path if os.path.isabs(f.path) else os.path.join(root, f.path))
        if any((path, n) in build_lines for n in range(f.line, max(f.line, f.end_line) + 1)):
            lines.append(f"{f.path}:{f.line}: {f.code} {f.message} -> runs while the model is built; zgen's runtime "
                         "replays the constructor on the real weights, so it takes effect as in a plain build")
            keys.add((f.path, f.line, f.code))
    return lines, keys


def trace_failure_note(finding, static: Sequence, root, static_root=None) -> str:
    """Whether the static check also flagged where the trace stopped: a ZG2xx on that line, or within 5 lines."""
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
