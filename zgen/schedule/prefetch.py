"""The prefetch rule: which all-gathers a position issues ahead of use.

DeepSpeed's rule, used by the planner and by the runtime's default plan
alike: at each position the next units in the order (with the owners of
their external parameters) are issued while the elements in flight are below
`min(prefetch bucket, max live - elements live now)`. The unit that fills the
bucket is still issued, so a unit larger than the bucket is prefetched alone;
units already gathered cost nothing. A bucket or max live of 0 turns
prefetch off. Torch-free, so `zgen.runtime` can import it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from zgen.schedule.replay import owners, simulate
from zgen.schedule.plan import Plan

__all__ = ["prefetch_lists"]

Lists = tuple[tuple[str, ...], ...]


def prefetch_lists(plan: Plan, numel: Mapping[str, int], bucket: int, max_live: int) -> tuple[Lists, Lists]:
    """Forward and backward prefetch lists for `plan` (its own lists are ignored); `numel` is per unit."""
    if bucket <= 0 or max_live <= 0:
        return tuple(() for _ in plan.forward_order), tuple(() for _ in plan.backward_order)

    def choose(order: Sequence[str], i: int, live: list[str]) -> list[str]:
        budget = min(bucket, max_live - sum(numel[m] for m in live))
        picked: list[str] = []
        inflight = 0
        for j in range(i + 1, len(order)):
            for m in (order[j], *owners(plan, order[j])):
                if inflight >= budget:
                    return picked
                if m not in live and m not in picked:
                    picked.append(m)
                    inflight += numel[m]
        return picked

    steps = simulate(plan, choose=choose)
    return (tuple(s.issued for s in steps if s.phase == "forward"),
            tuple(s.issued for s in steps if s.phase == "backward"))
