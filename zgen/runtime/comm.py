"""Process group setup, the three collectives the engine uses, and CUDA stream plumbing.

`init_distributed` is the only place that talks to `torchrun`'s environment.
The collectives are thin wrappers over `torch.distributed` that pick the
non-deprecated spelling available in the installed torch. `Streams` hides the
difference between CUDA (side streams ordered by events) and CPU (everything
synchronous), so the engine has a single code path for both.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from zgen.errors import ZgenError

__all__ = ["DistInfo", "init_distributed", "shutdown", "world", "all_gather", "reduce_scatter", "all_reduce_sum",
           "node_group", "Streams"]


@dataclass(frozen=True, slots=True)
class DistInfo:
    """The process's place in the job."""

    rank: int
    world_size: int
    local_rank: int
    device: torch.device


def _resolve_device(device: str) -> str:
    if device not in ("auto", "cpu", "cuda"):
        raise ZgenError(f'init_distributed(device={device!r}): use "auto", "cpu" or "cuda"')
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ZgenError('init_distributed(device="cuda") but torch sees no CUDA device', help='use device="cpu"')
    return device


def init_distributed(device: str = "auto") -> DistInfo:
    """Join the job `torchrun` started (env://): NCCL on GPU, gloo on CPU.

    Without torchrun's environment (`RANK`, `WORLD_SIZE`) this is the
    single-process path: no process group is created and the engine runs
    with world size 1. Calling it again returns the same answer.
    """
    kind = _resolve_device(device)
    launched = "RANK" in os.environ and "WORLD_SIZE" in os.environ
    local_rank = int(os.environ.get("LOCAL_RANK", "0")) if launched else 0
    dev = torch.device("cuda", local_rank) if kind == "cuda" else torch.device("cpu")
    if kind == "cuda":
        torch.cuda.set_device(dev)
    if launched and not dist.is_initialized():
        if kind == "cuda":
            dist.init_process_group("nccl", init_method="env://", device_id=dev)
        else:
            dist.init_process_group("gloo", init_method="env://")
        atexit.register(shutdown)
    rank, size = world()
    return DistInfo(rank, size, local_rank, dev)


def shutdown() -> None:
    """Leave the job cleanly: free unreachable engine state, then destroy the process group.

    The collection must come first. Left to interpreter exit, the autograd
    cycles that still hold collective buffers are freed while Python is
    finalizing; gloo's worker threads then abort the process ("terminate
    called without an active exception") on some exits. Registered with
    `atexit` by `init_distributed`, so a script that forgets it is safe too.
    """
    gc.collect()
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def world() -> tuple[int, int]:
    """(rank, world_size) of the default process group, (0, 1) without one."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


_ALL_GATHER = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
_REDUCE_SCATTER = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor


def all_gather(out: torch.Tensor, shard: torch.Tensor, group=None) -> None:
    """`out` (size x shard) <- every rank's `shard` in `group` (default: the world), in rank order."""
    _ALL_GATHER(out, shard, group=group)


def reduce_scatter(out: torch.Tensor, full: torch.Tensor) -> None:
    """`out` <- this rank's slice of the elementwise SUM of every rank's `full`."""
    _REDUCE_SCATTER(out, full, op=dist.ReduceOp.SUM)


def all_reduce_sum(t: torch.Tensor) -> None:
    """`t` <- the elementwise sum of every rank's `t`."""
    dist.all_reduce(t, op=dist.ReduceOp.SUM)


def node_group(size: int) -> tuple[object, int]:
    """The process group of `size` consecutive ranks holding this one (a node, when `size` is the GPUs per node),
    and this rank's index in it. Collective: every rank calls it with the same size."""
    group, _ = dist.new_subgroups(group_size=size)
    return group, dist.get_rank() % size


class Streams:
    """The main stream plus the side streams for gathers, reductions and the optimizer.

    On CPU every stream is `None`: work runs in program order and the event
    helpers do nothing, which is exactly the ordering the CUDA path enforces.
    """

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"
        if self.cuda:
            self.main = torch.cuda.current_stream(device)
            self.gather = torch.cuda.Stream(device, priority=-1)
            self.reduce = torch.cuda.Stream(device, priority=-1)
            self.optim = torch.cuda.Stream(device)
        else:
            self.main = self.gather = self.reduce = self.optim = None

    def capture_main(self) -> None:
        """Use the caller's current stream as the main stream (called at every forward)."""
        if self.cuda:
            self.main = torch.cuda.current_stream()

    def on(self, stream):
        return torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext()

    def record(self, stream):
        if stream is None:
            return None
        ev = torch.cuda.Event()
        ev.record(stream)
        return ev

    def wait(self, stream, event) -> None:
        if stream is not None and event is not None:
            stream.wait_event(event)

    def synchronize(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()
