"""Replaying a `Plan` position by position, the way the runtime executes it.

`simulate` says, at every position of the forward and backward orders, which
units hold full parameters, which were gathered on demand, which all-gathers
were issued ahead of use and which units were freed. The planner builds its
prefetch lists and kept units on it, `zgen plan` its unit table and memory
timeline. Torch-free: it reads only the plan's names.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from zgen.schedule.plan import ROOT, Plan

__all__ = ["Step", "simulate", "spans", "inside", "owners"]

# choose(order, i, live) -> the units to issue at position i of `order`, given what is live.
Chooser = Callable[[Sequence[str], int, list[str]], Sequence[str]]


@dataclass(frozen=True, slots=True)
class Step:
    """One position of a replayed plan: `unit` runs while the units in `gathered` hold full parameters."""

    phase: str  # "forward" or "backward"
    index: int
    unit: str
    gathered: tuple[str, ...]  # gathered or in flight while `unit` runs, in the order they were issued
    on_demand: tuple[str, ...]  # gathered here without having been prefetched
    issued: tuple[str, ...]  # all-gathers this position issues ahead of use
    freed: tuple[str, ...]  # released when this position's call ends


def inside(name: str, outer: str) -> bool:
    """Whether module `name` is `outer` or nested in it (every module is inside the root)."""
    return outer == ROOT or name == outer or name.startswith(outer + ".")


def spans(order: Sequence[str]) -> list[int]:
    """For each position, the last position of that call: units nested in it run inside it."""
    ends = []
    for i, m in enumerate(order):
        j = i
        while j + 1 < len(order) and order[j + 1] != m and inside(order[j + 1], m):
            j += 1
        ends.append(j)
    return ends


def owners(plan: Plan, module: str) -> list[str]:
    """The units owning the external parameters that unit `module` reads (gathered with it)."""
    own = plan.owner_of()
    return [own[p] for p in plan.unit(module).external if p in own]


def simulate(plan: Plan, *, phase: str | None = None, choose: Chooser | None = None) -> list[Step]:
    """Replay a plan the way the runtime executes it; `phase` limits the result to one phase.

    Forward: a unit is gathered when it starts (unless prefetched), the owners
    of its external parameters with it; then the position's prefetch list is
    issued. A unit is released when its call ends (nested units end inside
    it) unless `reshard_after_forward` is False or it runs again later in the
    phase. Backward: the same in `backward_order`; every unit is released
    after its last backward call. `choose(order, i, live)`, when given,
    decides the prefetch lists instead of the plan (how prefetch lists are made).
    """
    steps: list[Step] = []
    live: list[str] = []
    for ph, order, pre in (
        ("forward", plan.forward_order, plan.forward_prefetch),
        ("backward", plan.backward_order, plan.backward_prefetch),
    ):
        ends = spans(order)
        last = {m: i for i, m in enumerate(order)}
        running: list[tuple[str, int]] = []  # (unit, position where its call ends)
        for i, m in enumerate(order):
            demand = [u for u in dict.fromkeys([m, *owners(plan, m)]) if u not in live]
            live.extend(demand)
            wanted = choose(order, i, live) if choose is not None else (pre[i] if pre else ())
            issued = [u for u in wanted if u not in live]
            live.extend(issued)
            running.append((m, ends[i]))
            gathered = tuple(live)
            done = [u for u, e in running if e == i]
            running = [(u, e) for u, e in running if e != i]
            pinned = {x for u, _ in running for x in (u, *owners(plan, u))}
            freed: list[str] = []
            for u in done:
                for x in (u, *owners(plan, u)):
                    if x in pinned or x in freed or x not in live or last.get(x, -1) > i:
                        continue
                    if ph == "forward" and not plan.unit(x).reshard_after_forward:
                        continue
                    freed.append(x)
            live = [x for x in live if x not in freed]
            steps.append(Step(ph, i, m, gathered, tuple(demand), tuple(issued), tuple(freed)))
        if ph == "forward":
            # Gathers the forward left behind (prefetched but never run) do not carry into backward.
            live = [x for x in live if not plan.unit(x).reshard_after_forward]
    return [s for s in steps if phase is None or s.phase == phase]
