"""Optimizer offload: fp32 masters and optimizer state in host memory, the update on a host thread.

At the accumulation boundary the engine hands each unit's fp32 gradient
shard to `OffloadedOptimizer.step_unit` in forward order. On CUDA the
gradient (and the step's divisor) is copied down into (pinned) host memory
on a side stream; a single host thread then waits for that copy, steps the
inner optimizer on the host master (torch's fused CPU AdamW, or any torch
optimizer), casts the updated master to the compute dtype and copies it up
into the unit's device shard on the side stream. The call returns at once
with a `PendingUpdate`: the unit's next gather waits for it, so unit k's
update on the host overlaps the device work of the units before it in the
next forward.

Device memory per parameter: the compute-dtype shard (2 bytes in bf16)
instead of 16 (fp32 master and Adam's two moments) - plus, transiently, the
fp32 gradient shard of the accumulation window. With parameter offload
(`offload_param`) the compute-dtype shard stays in host memory as well: the
update casts into it on the host, and each gather copies it up first
(`zgen.runtime.sharding`), so only gathered units occupy the device.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

import torch

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

    def __init__(self, inner, device: torch.device, pin_memory: bool) -> None:
        self.inner = inner
        self.cuda = device.type == "cuda"
        self.pin = pin_memory and self.cuda
        self.stream = torch.cuda.Stream(device) if self.cuda else None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zgen-offload")
        self._down: dict[str, torch.Tensor] = {}  # per unit: host buffer the gradient is copied into
        self._up: dict[str, torch.Tensor] = {}  # per unit: host buffer of the compute-dtype weights
        self._running: dict[str, Future] = {}
        self._divisor: tuple[torch.Tensor, torch.Tensor] | None = None  # (device divisor, its host copy)

    def step_unit(self, u: UnitState, grad: torch.Tensor, divisor: torch.Tensor, lr: float) -> PendingUpdate:
        """Start `u`'s update (call on the optimizer stream); returns at once."""
        earlier = self._running.get(u.label)
        if earlier is not None:
            earlier.result()  # its host buffers are about to be refilled
        if not self.cuda:
            job = self._pool.submit(self._update, u, grad, divisor, None, lr)
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
            job = self._pool.submit(self._update, u, down, self._divisor[1], copied, lr)
        self._running[u.label] = job
        return PendingUpdate(job)

    def _buffer(self, pool: dict[str, torch.Tensor], u: UnitState, dtype: torch.dtype) -> torch.Tensor:
        buf = pool.get(u.label)
        if buf is None:
            buf = pool[u.label] = torch.empty(u.layout.shard, dtype=dtype, pin_memory=self.pin)
        return buf

    def _update(self, u: UnitState, grad: torch.Tensor, divisor: torch.Tensor, copied, lr: float):
        """Host thread: the step on the host master, then the compute-dtype copy up."""
        if copied is not None:
            copied.synchronize()
        self.inner.step_unit(u, grad, divisor, lr)
        if not self.cuda or u.offload_param:  # `lp` is in host memory: the next gather copies it up
            u.lp.copy_(u.master)
            return None
        up = self._buffer(self._up, u, u.lp.dtype)
        up.copy_(u.master)  # cast on the host: half the bytes over the link in bf16
        with torch.cuda.stream(self.stream):
            u.lp.copy_(up, non_blocking=self.pin)
            done = torch.cuda.Event()
            done.record(self.stream)
        return done

    def synchronize(self) -> None:
        """Wait for every update under way."""
        for job in list(self._running.values()):
            job.result()

    def state(self, u: UnitState) -> dict:
        """The inner optimizer's state of `u` (host tensors)."""
        return self.inner.state(u)

    def load_state(self, u: UnitState, state: dict | None) -> None:
        """Set `u`'s state (tensors moved to the host)."""
        self.inner.load_state(u, None if state is None else {k: v.to("cpu") for k, v in state.items()})
