"""One unit's storage: flat shards, the gathered buffer, and the views the module computes with.

Per unit and rank:

* the fp32 master shard: `master`, or with a split master (the bf16 default)
  `hi` (bf16, the weights rounded) plus `lo` (int16, the remainder), which
  together are the fp32 values bit for bit (`zgen.runtime.split`);
* `lp` - a low-precision shard used as the all-gather input when the master is
  plain fp32, the world size is above 1 and compute is not fp32 (with a split
  master `hi` is that input); with optimizer offload the master is in host
  memory and `lp` (compute dtype, on the device) is always there: the gather
  input, or at world size 1 the gathered buffer itself;
  With parameter offload (`offload_param`) `lp` lives in (pinned) host
  memory too, and each gather starts by copying it up (`zgen.runtime.sharding`);
* `full` - the gathered flat buffer in the compute dtype. Its storage is
  resized to zero when the unit is freed and back when it is gathered again,
  so views that autograd saved in forward stay valid for backward (the same
  trick FSDP uses). At world size 1 it is `hi` or the fp32 `master` itself
  (nothing to gather), a persistent copy with `keep_low_precision`, or else
  a buffer the master is cast into just before the unit runs;
* `grad` - fp32 gradient shard, allocated at the first backward of an
  accumulation window and dropped after the optimizer step (or `held_grads`,
  autograd's own gradients handed to a split-master optimizer directly).

This is storage only: how the buffer is gathered and the gradients reduced
is the unit's sharding strategy (`zgen.runtime.sharding`, which also owns
hpZ's secondary partitions), when is its `zgen.runtime.group.UnitGroup`'s.
"""

from __future__ import annotations

import torch

from . import split as split_codec
from .layout import FlatLayout
from .plans import BoundUnit

__all__ = ["UnitState"]


class UnitState:
    """The shards and buffers of one unit (or of the persistent pseudo-unit, or a unit's frozen part)."""

    def __init__(
        self,
        bound: BoundUnit,
        layout: FlatLayout,
        rank: int,
        device: torch.device,
        compute_dtype: torch.dtype,
        keep_low_precision: bool,
        pinned: bool,
        split: bool = False,
        offload: bool = False,
        pin_memory: bool = False,
        offload_param: bool = False,
    ) -> None:
        self.label = bound.label
        self.bound = bound
        self.layout = layout
        self.rank = rank
        self.pinned = pinned  # persistent pseudo-unit: gathered once per step, never freed
        self.split = split  # master kept as bf16 `hi` + int16 `lo` (zgen.runtime.split)
        self.offload = offload  # fp32 master in host memory; `lp` is the device copy the unit computes from
        self.offload_param = offload_param  # `lp` in host memory as well, copied up at each gather
        self.names = [s.name for s in layout.slots]
        world = layout.world_size
        low = compute_dtype != torch.float32
        self.master = self.lp = self.hi = self.lo = None
        if offload:
            pin = pin_memory and torch.cuda.is_available() and device.type == "cuda"
            self.master = torch.zeros(layout.shard, dtype=torch.float32, device="cpu", pin_memory=pin)
            if offload_param:
                self.lp = torch.empty(layout.shard, dtype=compute_dtype, device="cpu", pin_memory=pin)
            else:
                self.lp = torch.empty(layout.shard, dtype=compute_dtype, device=device)
        elif split:
            self.hi = torch.zeros(layout.shard, dtype=torch.bfloat16, device=device)
            self.lo = torch.zeros(layout.shard, dtype=torch.int16, device=device)
        else:
            self.master = torch.zeros(layout.shard, dtype=torch.float32, device=device)
            if world > 1 and low:
                self.lp = torch.empty(layout.shard, dtype=compute_dtype, device=device)
        # `static`: `full` aliases a persistent tensor, so it is never freed and needs no gather.
        self.static = world == 1 and not offload_param and (not low or keep_low_precision or split or offload)
        if self.static and offload:
            self.full = self.lp
        elif world == 1 and split:
            self.full = self.hi
        elif world == 1 and not low and not offload:
            self.full = self.master
        elif self.static:
            self.full = torch.empty(layout.padded, dtype=compute_dtype, device=device)
        else:
            self.full = torch.empty(layout.padded, dtype=compute_dtype, device=device)
            self.full.untyped_storage().resize_(0)
        # Separate aliases (each `.data` has its own version counter): writes through `_write`
        # must not bump the counter of the views autograd saved from `_read`.
        self._read = self.full.data
        self._write = self.full.data
        self.anchor = torch.empty(0, device=device, requires_grad=True)

    # -- master weights ------------------------------------------------------
    def read_master(self) -> torch.Tensor:
        """This rank's fp32 master shard (decoded, i.e. a new tensor, for a split master)."""
        return split_codec.decode(self.hi, self.lo) if self.split else self.master

    def write_master(self, values: torch.Tensor) -> None:
        """Set this rank's fp32 master shard and refresh every low-precision copy of it."""
        if self.split:
            split_codec.encode(values.to(torch.float32), self.hi, self.lo)
        else:
            self.master.copy_(values)
        self.refresh_low_precision()

    def refresh_low_precision(self) -> None:
        """Bring the compute-dtype copies up to date after the master changed."""
        if self.lp is not None:
            self.lp.copy_(self.master)
        elif self.static and not self.split and self.full is not self.master:
            self._write.copy_(self.master)

    # -- storage -----------------------------------------------------------
    @property
    def gather_input(self) -> torch.Tensor:
        if self.split:
            return self.hi
        return self.lp if self.lp is not None else self.master

    def allocate(self) -> None:
        """Give the gathered buffer its storage back (a no-op when it has it)."""
        nbytes = self.layout.padded * self.full.element_size()
        storage = self.full.untyped_storage()
        if storage.size() != nbytes:
            storage.resize_(nbytes)

    def release(self) -> None:
        """Drop the gathered buffer's storage; views autograd saved stay valid for the next gather."""
        if not self.static and not self.pinned:
            self.full.untyped_storage().resize_(0)

    @property
    def write_target(self) -> torch.Tensor:
        """The gathered buffer, to write into (a gather, a cast)."""
        return self._write

    @property
    def read_target(self) -> torch.Tensor:
        """The gathered buffer, to read from (the views, hpZ's secondary slice)."""
        return self._read

    def make_views(self) -> tuple[torch.Tensor, ...]:
        base = self._read
        return tuple(base[s.offset : s.end].view(s.shape) for s in self.layout.slots)

    def grad_layout_views(self, flat: torch.Tensor) -> list[torch.Tensor]:
        """Per-parameter views of a flat buffer laid out like `full`."""
        return [flat[s.offset : s.end].view(s.shape) for s in self.layout.slots]

    def gap_views(self, flat: torch.Tensor) -> list[torch.Tensor]:
        return [flat[a:b] for a, b in self.layout.gaps()]

    # -- checkpoint helpers ------------------------------------------------
    def shard_of(self, flat_full: torch.Tensor) -> torch.Tensor:
        lo, hi = self.layout.shard_range(self.rank)
        return flat_full[lo:hi]
