"""Optimizer offload: fp32 masters and optimizer state in host memory, the update on a host thread.

A unit's update starts as soon as its gradient is final. With a divisor
known before the backward ends (no global-norm clipping, no fp16 loss
scale: `step.Stepper.early_divisor`) that is in the backward of the
accumulation window's last micro-step, right after the unit's gradient fold
(`group.UnitGroup.post_backward`), so the host updates of the units folded
first (the last ones of the forward) overlap the rest of the backward;
otherwise it is the accumulation boundary (`engine.step()`), unit by unit in
forward order, as before. On CUDA the gradient (and the step's divisor) is
copied down into (pinned) host memory on a side stream, ordered after the
stream that folded it; a single host thread then waits for that copy, steps
the inner optimizer on the host master (torch's fused CPU AdamW, or any
torch optimizer), casts the updated master to the compute dtype and copies
it up into the unit's device shard on the side stream. The call returns at
once with a `PendingUpdate`: the unit's next gather waits for it.

The host thread takes, of the queued updates whose gradient is already on
the host, the first in the order of `prioritize` (at the boundary the engine
puts the updates not yet begun into the next forward's order), and when none
is, the first submitted (its copy lands first). So during the backward it
updates units as their gradients land, last unit first, and never idles
waiting for the gradient the backward folds last (the root's) while others
are ready; what is left when the backward ends runs in the order the next
forward gathers it, and unit k's update overlaps the device work of the
units before it.
Each unit's update reads and writes only its own shard and state, so the
order changes no result.

Partial offload (`offload_optimizer.ratio` below 1): the units the step
reaches first (the persistent pseudo-unit, then forward order) keep their
fp32 master and optimizer state on the device, as far as `1 - ratio` of the
parameters goes (`zgen.zero_policy.optimizer_on_device`); `kept` steps them
on the device stream at once. They are the units whose gradients the backward
makes last and whose weights the next forward needs first, so the host's
share of the update overlaps the middle of the step instead of its ends.

Device memory per parameter: the compute-dtype shard (2 bytes in bf16)
instead of 16 (fp32 master and Adam's two moments) - plus, transiently, the
fp32 gradient shard of the accumulation window. With parameter offload
(`offload_param`) the compute-dtype shard stays in host memory as well: the
update casts into it on the host, and each gather copies it up first
(`zgen.runtime.sharding`), so only gathered units occupy the device.
"""

from __future__ import annotations

import threading
import weakref
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Callable

import torch

from .host_adam import HostAdam
from .unit import UnitState

__all__ = ["OffloadedOptimizer", "PendingUpdate"]


class PendingUpdate:
    """A unit's update under way on the host; `wait()` returns the device event that ends its copy up."""

    __slots__ = ("_future",)

    def __init__(self, future: Future) -> None:
        self._future = future

    def wait(self):
        """Block until the host step is done and its copy up issued; the CUDA event after it (None on CPU)."""
        return self._future.result()


class OffloadedOptimizer:
    """Steps `inner` (built over the host masters) on a host thread; see the module docstring."""

    def __init__(self, inner, device: torch.device, pin_memory: bool, compute_dtype: torch.dtype | None = None,
                 kept=None) -> None:
        self.inner = inner
        self.kept = kept  # partial offload: the optimizer of the units whose state stays on the device
        self.cuda = device.type == "cuda"
        # Adam(W) on CUDA: the update and the cast into the compute dtype in one pass (`host_adam`).
        self._fused = HostAdam.build(inner, compute_dtype) if self.cuda and compute_dtype is not None else None
        self.pin = pin_memory and self.cuda
        self.stream = torch.cuda.Stream(device) if self.cuda else None
        self._pool = _HostQueue()
        self._down: dict[str, torch.Tensor] = {}  # per unit: host buffer the gradient is copied into
        self._up: dict[str, torch.Tensor] = {}  # per unit: host buffer of the compute-dtype weights
        self._running: dict[str, Future] = {}
        self._divisor: tuple[torch.Tensor, torch.Tensor] | None = None  # (device divisor, its host copy)

    def step_unit(self, u: UnitState, grad: torch.Tensor, divisor: torch.Tensor, lr: float) -> PendingUpdate:
        """Start `u`'s update (call on the optimizer stream); returns at once."""
        if not u.offload:  # kept on the device: stepped here, on the current stream
            self.kept.step_unit(u, grad, divisor, lr)
            u.refresh_low_precision()
            done = Future()
            done.set_result(torch.cuda.current_stream().record_event() if self.cuda else None)
            return PendingUpdate(done)
        earlier = self._running.get(u.label)
        if earlier is not None:
            earlier.result()  # its host buffers are about to be refilled
        if not self.cuda:
            job = self._pool.submit(u.label, self._update, u, grad, divisor, None, lr)
        else:
            self.stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(self.stream):
                if self._divisor is None or self._divisor[0] is not divisor:
                    host = torch.empty((), dtype=torch.float32, pin_memory=self.pin)
                    host.copy_(divisor, non_blocking=self.pin)
                    self._divisor = (divisor, host)
                down = self._buffer(self._down, u, torch.float32)
                down.copy_(grad, non_blocking=self.pin)
                copied = torch.cuda.Event()
                copied.record(self.stream)
            job = self._pool.submit(u.label, self._update, u, down, self._divisor[1], copied, lr, ready=copied.query)
        self._running[u.label] = job
        return PendingUpdate(job)

    def prioritize(self, order: list[str]) -> None:
        """Run the updates not yet begun in `order` (unit labels; others after them, in their own order)."""
        self._pool.prioritize(order)

    def _buffer(self, pool: dict[str, torch.Tensor], u: UnitState, dtype: torch.dtype) -> torch.Tensor:
        buf = pool.get(u.label)
        if buf is None:
            buf = pool[u.label] = torch.empty(u.layout.shard, dtype=dtype, pin_memory=self.pin)
        return buf

    def _update(self, u: UnitState, grad: torch.Tensor, divisor: torch.Tensor, copied, lr: float):
        """Host thread: the step on the host master, then the compute-dtype copy up."""
        if copied is not None:
            copied.synchronize()
        host_lp = not self.cuda or u.offload_param  # `lp` is in host memory: the next gather copies it up
        out = u.lp if host_lp else self._buffer(self._up, u, u.lp.dtype)  # cast on the host: half the bytes up in bf16
        if self._fused is not None:
            self._fused.step_unit(u, grad, divisor, lr, out)
        else:
            self.inner.step_unit(u, grad, divisor, lr)
            out.copy_(u.master)
        if host_lp:
            return None
        with torch.cuda.stream(self.stream):
            u.lp.copy_(out, non_blocking=self.pin)
            done = torch.cuda.Event()
            done.record(self.stream)
        return done

    def synchronize(self) -> None:
        """Wait for every update under way."""
        for job in list(self._running.values()):
            job.result()

    def state(self, u: UnitState) -> dict:
        """`u`'s optimizer state (host tensors, or device ones for a unit kept on the device)."""
        return (self.inner if u.offload else self.kept).state(u)

    def load_state(self, u: UnitState, state: dict | None) -> None:
        """Set `u`'s state (tensors moved to where its master is)."""
        where = u.master.device
        (self.inner if u.offload else self.kept).load_state(
            u, None if state is None else {k: v.to(where) for k, v in state.items()})


class _HostQueue:
    """One host thread running submitted calls: next, the queued one of highest priority among those ready.

    A call may come with `ready` (its gradient's copy down has landed: a CUDA event's
    `query`); the thread takes the first ready call in priority order (first submitted by
    default, `prioritize` reorders), and when none is ready, the first submitted, whose
    copy lands first (the copies run in submission order on one stream). So the thread
    never sits waiting for the gradient of a unit the backward folds last (the root) while
    gradients folded earlier are on the host, and once they all are, it runs them in the
    next forward's order.

    The thread stays (a thread that calls torch's parallel kernels brings its own pool of
    workers, so it is made once), holds nothing of a finished call, and ends when the
    queue is dropped.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._queue: list[_Job] = []  # waiting, in priority order
        self._thread: threading.Thread | None = None
        self._submitted = 0

    def submit(self, key: str, fn: Callable, *args, ready: Callable[[], bool] | None = None) -> Future:
        """Queue `fn(*args)` under `key` (`ready()`: whether it can start without waiting; None: always); its future."""
        job = Future()
        with self._cond:
            self._queue.append(_Job(key, self._submitted, ready, job, fn, args))
            self._submitted += 1
            if self._thread is None:
                self._thread = threading.Thread(target=_serve, args=(self._cond, self._queue), name="zgen-offload",
                                                daemon=True)
                self._thread.start()
                weakref.finalize(self, _stop, self._cond, self._queue)
            self._cond.notify()
        return job

    def prioritize(self, order: list[str]) -> None:
        """Reorder the waiting calls: keys in `order` first, in that order; the rest keep theirs."""
        rank = {k: i for i, k in enumerate(order)}
        with self._cond:
            self._queue.sort(key=lambda j: rank.get(j.key, len(rank)))  # stable: unranked keep their order


@dataclass(slots=True)
class _Job:
    key: str
    seq: int  # submission order
    ready: Callable[[], bool] | None
    future: Future | None  # None: the queue was dropped, the thread ends
    fn: Callable | None
    args: tuple


def _pick(queue: list[_Job]) -> int:
    """Index of the call to run next: the first ready one in priority order, else the first submitted."""
    calls = [i for i, j in enumerate(queue) if j.future is not None]
    if not calls:
        return 0  # only the stop mark is left
    for i in calls:
        if queue[i].ready is None or queue[i].ready():
            return i
    return min(calls, key=lambda i: queue[i].seq)


def _serve(cond: threading.Condition, queue: list) -> None:
    """The host thread of a `_HostQueue` (given its lock and list, not the queue, so the queue can be dropped)."""
    while True:
        with cond:
            while not queue:
                cond.wait()
            entry = queue.pop(_pick(queue))
        job, fn, args = entry.future, entry.fn, entry.args
        del entry
        if job is None:  # the queue was dropped
            return
        if job.set_running_or_notify_cancel():
            try:
                job.set_result(fn(*args))
            except BaseException as e:  # handed to whoever waits for the update
                job.set_exception(e)
        del job, fn, args  # hold nothing of a finished update


def _stop(cond: threading.Condition, queue: list) -> None:
    with cond:
        queue.append(_Job("", -1, None, None, None, ()))
        cond.notify()
