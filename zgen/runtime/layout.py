"""Where each parameter lives inside its unit's flat, padded buffer.

Pure arithmetic, no tensors: a `FlatLayout` places a unit's parameters one
after another, each starting on an `ALIGN`-element boundary (so a bf16 view is
32-byte aligned for the matrix kernels), then pads the total to a multiple of
`world_size * ALIGN` so every rank's shard has the same length and starts
aligned. Rank `r` holds elements `[r * shard, (r + 1) * shard)`.

The offsets do not depend on the world size; only the tail padding does. That
is what lets a checkpoint written on one world size load on another.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["ALIGN", "Slot", "FlatLayout", "dim0_chunk"]

ALIGN = 16


@dataclass(frozen=True, slots=True)
class Slot:
    """One parameter inside a flat buffer."""

    name: str
    shape: tuple[int, ...]
    offset: int
    # Derived once: the hooks read them for every parameter of every unit at every step.
    numel: int = field(init=False)
    end: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "numel", math.prod(self.shape))
        object.__setattr__(self, "end", self.offset + self.numel)


@dataclass(frozen=True, slots=True)
class FlatLayout:
    """The flat layout of one unit for one world size."""

    slots: tuple[Slot, ...]
    world_size: int
    padded: int  # length of the full flat buffer, a multiple of world_size * ALIGN

    @classmethod
    def build(cls, params: list[tuple[str, tuple[int, ...]]], world_size: int) -> FlatLayout:
        """Lay out `params` (name, shape) in order for `world_size` ranks."""
        slots, cursor = [], 0
        for name, shape in params:
            slots.append(Slot(name, tuple(shape), cursor))
            cursor = _round_up(cursor + math.prod(shape), ALIGN)
        padded = max(_round_up(cursor, world_size * ALIGN), world_size * ALIGN)
        return cls(tuple(slots), world_size, padded)

    @property
    def shard(self) -> int:
        """Elements per rank."""
        return self.padded // self.world_size

    @property
    def used(self) -> int:
        """Elements covered by parameters (the end of the last one)."""
        return self.slots[-1].end if self.slots else 0

    def gaps(self) -> list[tuple[int, int]]:
        """The (start, end) ranges of the flat buffer that hold no parameter (alignment and tail padding)."""
        out, cursor = [], 0
        for s in self.slots:
            if s.offset > cursor:
                out.append((cursor, s.offset))
            cursor = s.end
        if cursor < self.padded:
            out.append((cursor, self.padded))
        return out

    def shard_range(self, rank: int) -> tuple[int, int]:
        return rank * self.shard, (rank + 1) * self.shard

    def pieces(self, rank: int) -> list[tuple[Slot, int, int]]:
        """For each parameter overlapping `rank`'s shard: (slot, start, end) in flat coordinates."""
        lo, hi = self.shard_range(rank)
        return [(s, max(s.offset, lo), min(s.end, hi)) for s in self.slots if s.offset < hi and s.end > lo]


def dim0_chunk(rows: int, world_size: int, rank: int) -> tuple[int, int]:
    """Rows [start, end) of a dim-0 `Shard(0)` split (torch.chunk's rule, as DTensor uses it)."""
    full = -(-rows // world_size) if rows else 0
    start = min(full * rank, rows)
    return start, min(start + full, rows)


def _round_up(n: int, m: int) -> int:
    return -(-n // m) * m
