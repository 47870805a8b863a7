"""Which units stay gathered from their forward to their backward (DeepSpeed's reuse-distance rule).

A unit is kept when its next use comes within `stage3_max_reuse_distance`
elements of other units' gathers (counting the units that run in between),
as long as the gathered total stays within `stage3_max_live_parameters`;
the closest reuses are kept first. The planner and the memory model's
estimate from a model's shape (`zgen.memory`) both decide with this rule.
Torch-free.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from zgen.schedule.replay import simulate, spans
from zgen.schedule.plan import Plan, Unit

__all__ = ["kept_units"]


def kept_units(units: Sequence[Unit], forward: Sequence[str], backward: Sequence[str], numel: Mapping[str, int],
               max_reuse_distance: int, max_live: int) -> set[str]:
    """Modules of the units left gathered between their forward and backward."""
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
            if traversed >= max_reuse_distance:
                break
            if other == m:
                distance[m] = traversed
                break
            traversed += numel[other]
    keep: set[str] = set()
    for m in sorted(distance, key=lambda k: (distance[k], sequence.index(k))):
        trial = keep | {m}
        if _peak_live(units, forward, backward, numel, trial) <= max_live:
            keep = trial
    return keep


def _peak_live(units: Sequence[Unit], forward, backward, numel: Mapping[str, int], keep: set[str]) -> int:
    plan = Plan(
        units=tuple(Unit(module=u.module, params=u.params, external=u.external,
                         reshard_after_forward=u.module not in keep) for u in units),
        forward_order=tuple(forward),
        backward_order=tuple(backward),
    )
    return max((sum(numel[m] for m in s.gathered) for s in simulate(plan)), default=0)
