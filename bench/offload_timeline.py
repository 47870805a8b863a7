"""When each offloaded host update waits for its gradient, runs and ends, against the step: a timing probe.

Runs `bench/auto_bench.py` with the same arguments in this process, with `zgen.runtime.offload` and
`zgen.runtime.step` wrapped to log perf_counter times: ("upd", unit, queued, gradient landed, done),
("early", unit, t) when a unit's update starts in the backward, ("step", "", begin, end) for
`engine.step()`, ("wait", "", begin, end) for each forward's wait on an update. The log is written as
JSON to $OUT/$PROBE.json (PROBE defaults to "probe") at exit. Used for issue 21's run e (bench/NOTES.md):

    OUT=/tmp PROBE=rank1 python bench/offload_timeline.py --shape 8b --layers 16 --budgets 40 --batch 2 \
        --rank 1 --baselines none --gradient-clipping 0
"""
from __future__ import annotations

import atexit
import json
import os
import runpy
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the repository's zgen

import zgen.runtime.offload as offload  # noqa: E402
import zgen.runtime.step as step  # noqa: E402

LOG: list[tuple] = []


def _wrap_update(update):
    def timed(self, u, grad, divisor, copied, lr):
        queued = time.perf_counter()
        if copied is not None:
            copied.synchronize()
        landed = time.perf_counter()
        result = update(self, u, grad, divisor, None, lr)  # the copy has landed: nothing left to wait for
        LOG.append(("upd", u.label, queued, landed, time.perf_counter()))
        return result
    return timed


def _wrap_early(start_early):
    def timed(self, g):
        LOG.append(("early", g.label, time.perf_counter()))
        return start_early(self, g)
    return timed


def _wrap_span(kind, fn):
    def timed(self, *args):
        begin = time.perf_counter()
        result = fn(self, *args)
        LOG.append((kind, "", begin, time.perf_counter()))
        return result
    return timed


def _write() -> None:
    path = os.path.join(os.environ.get("OUT", "."), os.environ.get("PROBE", "probe") + ".json")
    with open(path, "w") as f:
        json.dump(LOG, f)


if __name__ == "__main__":
    offload.OffloadedOptimizer._update = _wrap_update(offload.OffloadedOptimizer._update)
    step.Stepper.start_early = _wrap_early(step.Stepper.start_early)
    step.Stepper.step = _wrap_span("step", step.Stepper.step)
    offload.PendingUpdate.wait = _wrap_span("wait", offload.PendingUpdate.wait)
    atexit.register(_write)
    sys.argv = [os.path.join(HERE, "auto_bench.py"), *sys.argv[1:]]
    sys.path.insert(0, HERE)
    runpy.run_path(sys.argv[0], run_name="__main__")
