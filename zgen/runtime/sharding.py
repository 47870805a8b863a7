"""How a unit's weights are spread over the ranks: one strategy per engine, chosen once, one small object per unit.

`choose(config, world_size, reduce_dtype)` picks the strategy when the
engine is built; each unit's `UnitGroup` then calls its own object's
`gather`, `keep`, `forget` and `reduce` at the moments the engine's hooks
decide, without asking which strategy it has:

* `OneRank` (world size 1): nothing crosses ranks. The gathered buffer is the
  fp32 master itself, its bf16 half (split master) or a persistent copy
  (`keep_low_precision`, optimizer offload), so the unit is never gathered;
  otherwise the "gather" casts the fp32 master into it or, with parameter
  offload, copies the host's compute-dtype shard up. Gradients fold into the
  fp32 shard in place, and a split master may take autograd's gradients as
  they are (`holds`).
* `Flat`: an all-gather of the compute-dtype shards over the world;
  gradients are reduce-scattered into the fp32 shard.
* `ParamOffload`: `Flat` from a compute-dtype shard kept in host memory: each
  gather first copies it up into one device staging buffer that all units
  share (their gathers run one after another on the gather stream).
* `HpZ` (`zero_hpz_partition_size` G > 1): `Flat` or `ParamOffload` for a
  unit's first gather after an update. When the unit is freed after a
  forward with gradients, each rank keeps its 1/G of the full weights (the
  secondary partition); the unit's gathers until its next update run inside
  the rank's group of G (a node) from those.

`gather` runs on the gather stream into `UnitState.write_target`; `reduce` on
the reduce stream into the group's fp32 gradient shard; `keep()` before a
gathered buffer is released after a forward with gradients, where the
strategy `keeps` something to re-gather from; `forget()` when the weights
are about to change (an update, a checkpoint load) while it has `kept` it.
The two flags are plain attributes, so a strategy with nothing to keep costs
the hooks no call. Storage the strategies need beyond the unit's own (the
secondary partitions, the staging buffer) they own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import torch

from . import comm
from .unit import UnitState

if TYPE_CHECKING:
    from .config import RuntimeConfig


class GradientSink(Protocol):
    """Where a unit's reduced gradient goes (its `UnitGroup`): the fp32 gradient shard, and its squared norm at
    an accumulation boundary."""

    grad: torch.Tensor
    norm_sq: torch.Tensor | None

__all__ = ["Strategy", "choose", "OneRank", "Flat", "ParamOffload", "HpZ", "Staging", "fold", "sq_norm"]


class OneRank:
    """World size 1: a cast (or a copy up from the host) instead of a gather, a local fold instead of a reduction."""

    __slots__ = ("u", "target", "source", "non_blocking")
    holds = True  # a split master's optimizer may read autograd's gradients directly
    keeps = kept = False

    def __init__(self, u: UnitState) -> None:
        self.u, self.target = u, u.write_target
        self.source = u.lp if u.offload_param else u.master  # None for a static unit, which is never gathered
        self.non_blocking = u.offload_param and u.lp.is_pinned()

    def gather(self) -> None:
        self.target.copy_(self.source, non_blocking=self.non_blocking)

    def keep(self) -> None:
        pass

    def forget(self) -> None:
        pass

    def reduce(self, g: GradientSink, grads: tuple, first: bool, boundary: bool) -> None:
        u = self.u
        fold(u.grad_layout_views(g.grad), u.gap_views(g.grad), grads, first)
        if first and boundary:  # the fp32 shard holds exactly these values: read the smaller copies
            g.norm_sq = sq_norm([x for x in grads if x is not None], g.grad.device)
        elif boundary:
            g.norm_sq = torch.linalg.vector_norm(g.grad).square()


class Flat:
    """All-gather over the world from the compute-dtype shards; reduce-scatter of the gradients."""

    __slots__ = ("u", "reduce_dtype", "target", "source")
    holds = keeps = kept = False

    def __init__(self, u: UnitState, reduce_dtype: torch.dtype) -> None:
        self.u, self.reduce_dtype = u, reduce_dtype
        # The gathered buffer and this rank's compute-dtype shard: the tensors never change, their values do.
        self.target, self.source = u.write_target, u.gather_input

    def gather(self) -> None:
        comm.all_gather(self.target, self.source)

    def keep(self) -> None:
        pass

    def forget(self) -> None:
        pass

    def reduce(self, g: GradientSink, grads: tuple, first: bool, boundary: bool) -> None:
        u, layout, dtype, grad = self.u, self.u.layout, self.reduce_dtype, g.grad
        buf = torch.empty(layout.padded, dtype=dtype, device=grad.device)
        fold(u.grad_layout_views(buf), u.gap_views(buf), grads, True)
        if first and dtype == torch.float32:
            comm.reduce_scatter(grad, buf)
        else:
            part = torch.empty(layout.shard, dtype=dtype, device=grad.device)
            comm.reduce_scatter(part, buf)
            grad.copy_(part) if first else grad.add_(part)
        if boundary:
            g.norm_sq = torch.linalg.vector_norm(grad).square()


class Staging:
    """The device buffer every unit's host shard is copied up into before its all-gather (parameter offload)."""

    __slots__ = ("buffer",)

    def __init__(self) -> None:
        self.buffer: torch.Tensor | None = None  # sized by `Strategy.finish` once every shard is known


class ParamOffload(Flat):
    """`Flat` from a host shard: copied up into the shared staging buffer, then all-gathered."""

    __slots__ = ("staging",)

    def __init__(self, u: UnitState, reduce_dtype: torch.dtype, staging: Staging) -> None:
        super().__init__(u, reduce_dtype)
        self.staging = staging

    def gather(self) -> None:
        u = self.u
        dev = self.staging.buffer[: u.layout.shard]
        dev.copy_(u.lp, non_blocking=u.lp.is_pinned())
        comm.all_gather(self.target, dev)


class HpZ:
    """The inner strategy's gather after an update; afterwards re-gathers inside the node from kept slices."""

    __slots__ = ("inner", "node", "index", "secondary", "kept", "holds")
    keeps = True

    def __init__(self, inner: Flat, node: Any, size: int, index: int) -> None:
        self.inner, self.node, self.index, self.holds = inner, node, index, inner.holds
        full = inner.u.full
        # This rank's 1/G of the gathered buffer, kept from a forward to the backward (storage only while kept).
        self.secondary = torch.empty(inner.u.layout.padded // size, dtype=full.dtype, device=full.device)
        self.secondary.untyped_storage().resize_(0)
        self.kept = False  # the secondary partition holds the current weights

    def gather(self) -> None:
        if self.kept:
            comm.all_gather(self.inner.target, self.secondary, group=self.node)
        else:
            self.inner.gather()

    def keep(self) -> None:
        """After a forward with gradients: keep this rank's slice of the weights for the node-local re-gather."""
        if not self.kept:
            sec, n = self.secondary, self.secondary.numel()
            storage = sec.untyped_storage()
            if storage.size() == 0:
                storage.resize_(n * sec.element_size())
            sec.copy_(self.inner.u.read_target[self.index * n : (self.index + 1) * n])
            self.kept = True

    def forget(self) -> None:
        if self.kept:
            self.kept = False
            self.secondary.untyped_storage().resize_(0)

    def reduce(self, g: GradientSink, grads: tuple, first: bool, boundary: bool) -> None:
        self.inner.reduce(g, grads, first, boundary)


class Strategy:
    """The choice for one engine: makes each unit's object (`unit`), then sizes what the units share (`finish`)."""

    def __init__(self, name: str, world_size: int, reduce_dtype: torch.dtype, offload_param: bool,
                 node: Any = None, node_size: int = 1, node_rank: int = 0) -> None:
        self.name = name  # for messages: "one rank", "flat", "parameter offload", "hpZ over G"
        self.world_size = world_size
        self.reduce_dtype = reduce_dtype
        self.offload_param = offload_param
        self.node, self.node_size, self.node_rank = node, node_size, node_rank
        self.staging = Staging()

    def unit(self, u: UnitState) -> OneRank | Flat | HpZ:
        """The object that gathers, frees and reduces unit `u`."""
        if self.world_size == 1:
            return OneRank(u)
        inner = ParamOffload(u, self.reduce_dtype, self.staging) if self.offload_param else Flat(u, self.reduce_dtype)
        if self.node is not None:
            return HpZ(inner, self.node, self.node_size, self.node_rank)
        return inner

    def finish(self, units: list[UnitState], device: torch.device, dtype: torch.dtype) -> None:
        """Allocate what the units share, now that every shard is known: parameter offload's staging buffer."""
        if self.offload_param and self.world_size > 1 and units:
            self.staging.buffer = torch.empty(max(u.layout.shard for u in units), dtype=dtype, device=device)


def choose(config: RuntimeConfig, world_size: int, reduce_dtype: torch.dtype) -> Strategy:
    """The strategy the config and the world size call for (collective with hpZ: every rank calls it)."""
    if world_size == 1:
        return Strategy("one rank", 1, reduce_dtype, config.offload_param)
    hpz = config.hpz_partition_size
    if hpz > 1:
        node, index = comm.node_group(hpz)
        return Strategy(f"hpZ over {hpz}", world_size, reduce_dtype, config.offload_param, node, hpz, index)
    return Strategy("parameter offload" if config.offload_param else "flat", world_size, reduce_dtype,
                    config.offload_param)


def fold(dst: list[torch.Tensor], gaps: list[torch.Tensor], grads: tuple, first: bool) -> None:
    """dst[i] (+)= grads[i]; when `first`, also zero what has no gradient so the buffer is fully written."""
    have = [(d, g) for d, g in zip(dst, grads) if g is not None]
    if have:
        ds, gs = zip(*have)
        if first:
            torch._foreach_copy_(list(ds), list(gs))
        else:
            torch._foreach_add_(list(ds), list(gs))
    if first:
        zero = [d for d, g in zip(dst, grads) if g is None] + gaps
        if zero:
            torch._foreach_zero_(zero)


def sq_norm(tensors: list[torch.Tensor], device: torch.device) -> torch.Tensor:
    """Sum of squares of all elements, accumulated in fp32."""
    if not tensors:
        return torch.zeros((), device=device)
    return torch.stack(torch._foreach_norm(tensors, 2, dtype=torch.float32)).square().sum()
