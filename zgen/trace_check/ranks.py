"""Simulated ranks: one process plays rank after rank, each as its own rank would see the job.

What differs between real ranks, and is given to each simulated one:

* its rank: `torch.distributed` is initialised with torch's *fake* process
  group at that rank and world size (so `get_rank()`, `get_world_size()`,
  `is_initialized()` answer as that rank, however the code imported them), and
  `RANK`, `LOCAL_RANK`, `WORLD_SIZE`, `LOCAL_WORLD_SIZE` are set;
* its data: the inputs function gets a generator seeded per rank;
* its random state: torch, Python's `random` and numpy are seeded per rank
  after the build (the build itself is seeded the same on every rank, as
  real ranks build identical models).

Collectives must agree across ranks, and a value that went through one is
the same on every rank (HF `generate`'s `synced_gpus` flag). `Collectives`
replaces the collectives of `torch.distributed` for the runs: the first run
that makes the k-th call fixes its result (as if every rank had sent its
value), every later run receives that result, and the call is recorded as an
event, so a collective that only some ranks make is a divergence like a
module call.
"""

from __future__ import annotations

import contextlib
import copy
import os
import random
import sys
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed import distributed_c10d as c10d

from .decisions import mark

__all__ = ["simulated_ranks", "as_rank", "seeded", "preserved_random_state", "Collectives"]

# More simulated ranks than this add little: a decision on the rank compares it with 0, the last rank, parity
# or half the world, which these four cover.
MAX_RANKS = 4


def simulated_ranks(world_size: int, limit: int = MAX_RANKS) -> list[int]:
    """The ranks to simulate besides rank 0: the last, 1, and the middle of the world, at most `limit` in all."""
    world = max(world_size, 2)
    out = [0]
    for r in (world - 1, 1, world // 2):
        if r not in out and len(out) < limit:
            out.append(r)
    return out


@contextlib.contextmanager
def as_rank(rank: int, world_size: int, gpus_per_node: int | None = None) -> Iterator[None]:
    """`torch.distributed` and the launcher's environment as rank `rank` of `world_size` sees them."""
    import torch.testing._internal.distributed.fake_pg  # noqa: F401  (registers the `fake` backend)

    if dist.is_initialized():
        from zgen.errors import ZgenError

        raise ZgenError("cannot simulate ranks: a torch.distributed process group is already initialised",
                        help="run `zgen check --trace` in a process of its own")
    per_node = gpus_per_node or min(world_size, 8)
    env = {"RANK": rank, "LOCAL_RANK": rank % per_node, "WORLD_SIZE": world_size,
           "LOCAL_WORLD_SIZE": min(per_node, world_size), "GROUP_RANK": rank // per_node,
           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update({k: str(v) for k, v in env.items()})
    dist.init_process_group("fake", rank=rank, world_size=world_size, store=dist.HashStore())
    try:
        yield
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def seeded(seed: int) -> None:
    """Seed torch, Python's `random` and numpy (when the user's code imported it)."""
    torch.manual_seed(seed)
    random.seed(seed)
    np = sys.modules.get("numpy")
    if np is not None:
        np.random.seed(seed % (1 << 32))


@contextlib.contextmanager
def preserved_random_state() -> Iterator[None]:
    """Put torch's, Python's and numpy's random state back as they were."""
    np = sys.modules.get("numpy")
    py = random.getstate()
    npstate = np.random.get_state() if np is not None else None
    with torch.random.fork_rng(devices=[]):
        try:
            yield
        finally:
            random.setstate(py)
            if npstate is not None:
                np.random.set_state(npstate)


class Collectives:
    """The collectives of `torch.distributed`, answering alike on every simulated rank (see the module docstring).

    `record(name)` is called for each collective a run makes.
    """

    _NAMES = ("all_reduce", "reduce", "broadcast", "all_gather", "all_gather_into_tensor", "all_gather_object",
              "broadcast_object_list", "barrier", "reduce_scatter", "reduce_scatter_tensor", "all_to_all",
              "all_to_all_single", "gather", "scatter")

    def __init__(self) -> None:
        self._results: dict[int, Any] = {}
        self._count = 0
        self.world = 2
        self.record: Callable[[str], None] = lambda name: None

    @contextlib.contextmanager
    def active(self, world_size: int, record: Callable[[str], None]) -> Iterator[None]:
        """Patch the collectives for one run."""
        self._count = 0
        self.world = world_size
        self.record = record
        saved = []
        for module in (dist, c10d):
            for name in self._NAMES:
                original = getattr(module, name, None)
                if original is not None:
                    saved.append((module, name, original))
                    setattr(module, name, self._wrap(name, getattr(c10d, name, original)))
        try:
            yield
        finally:
            for module, name, original in saved:
                setattr(module, name, original)
            self.record = lambda name: None

    def _wrap(self, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def collective(*args: Any, **kwargs: Any) -> Any:
            index = self._count
            self._count += 1
            self.record(name)
            result = original(*args, **kwargs)  # the fake process group: validates arguments, moves nothing
            self._agree(name, index, args, kwargs)
            return result

        collective.__name__ = name
        return collective

    def _agree(self, name: str, index: int, args: tuple, kwargs: dict) -> None:
        """Give the tensors or objects a collective writes the value the first run fixed for this call."""
        targets = [t for t in _outputs(name, args, kwargs)
                   if not (isinstance(t, torch.Tensor) and t.requires_grad and not t.is_leaf)]
        if not targets:
            return  # nothing written, or a tensor autograd saved: changing it in place would break backward
        fixed = self._results.get(index)
        if fixed is None or fixed[0] != name or len(fixed[1]) != len(targets):
            values = [self._first(name, t, args, kwargs) for t in targets]
            self._results[index] = (name, values)
        else:
            values = fixed[1]
        for i, (t, v) in enumerate(zip(targets, values)):
            if isinstance(t, torch.Tensor) and isinstance(v, torch.Tensor):
                if t.shape == v.shape and t.dtype == v.dtype:
                    with torch.no_grad():
                        t.copy_(v)
                mark(t, frozenset())
            elif isinstance(t, list):
                t[:] = copy.deepcopy(v)

    def _first(self, name: str, target: Any, args: tuple, kwargs: dict) -> Any:
        """The result of a collective when every rank sent what this one did."""
        if isinstance(target, list):
            obj = args[1] if name == "all_gather_object" and len(args) > 1 else kwargs.get("obj")
            if name == "all_gather_object":
                target[:] = [copy.deepcopy(obj) for _ in target]
            return copy.deepcopy(target)
        with torch.no_grad():
            if name in ("all_reduce", "reduce"):
                op = args[1] if len(args) > 1 else kwargs.get("op", dist.ReduceOp.SUM)
                if op == dist.ReduceOp.SUM and target.dtype != torch.bool:
                    target.mul_(self.world)
                elif op == dist.ReduceOp.PRODUCT and target.dtype != torch.bool:
                    target.pow_(self.world)
            elif name == "all_gather":
                source = args[1] if len(args) > 1 else kwargs.get("tensor")
                if isinstance(source, torch.Tensor) and source.shape == target.shape:
                    target.copy_(source)
            elif name == "all_gather_into_tensor":
                source = args[1] if len(args) > 1 else kwargs.get("input_tensor")
                if isinstance(source, torch.Tensor) and target.numel() % max(source.numel(), 1) == 0:
                    target.copy_(source.reshape(-1).repeat(target.numel() // max(source.numel(), 1))
                                 .reshape(target.shape))
        return target.detach().clone()


def _outputs(name: str, args: tuple, kwargs: dict) -> list[Any]:
    """The tensors (or object lists) a collective writes."""
    first = args[0] if args else next(iter(kwargs.values()), None)
    if name in ("all_reduce", "reduce", "broadcast", "all_gather_into_tensor"):
        return [first] if isinstance(first, torch.Tensor) else []
    if name == "all_gather":
        return list(first) if isinstance(first, list) else []
    if name in ("all_gather_object", "broadcast_object_list"):
        return [first] if isinstance(first, list) else []
    return []
