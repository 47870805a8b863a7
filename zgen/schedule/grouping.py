"""Parameters into units: the pure core of the planner and of the runtime's default plan.

`group(params, blocks, threshold)` takes the model's parameters (canonical
name, size and aliases), the modules that get a unit of their own (the block
modules, `zgen.schedule.units`) and `stage3_param_persistence_threshold`:

* a parameter of at most `threshold` elements is persistent (DeepSpeed's rule,
  `numel <= threshold`): gathered for the whole step, in no unit;
* every other parameter belongs to the unit of the innermost block module
  above its canonical name, else to the root unit;
* a tied parameter registered, under an alias, inside another unit's module is
  *external* there: that unit keeps the parameter's owner gathered while it
  runs, and the runtime installs the parameter there;
* a unit that gathers nothing (no parameters of its own, no externals) is
  left out, the root included. A block whose parameters are all tied to
  another block's keeps a unit with externals only, so its owner is gathered
  just while it runs.

Both callers add what they know on top: the planner the orders, externals
and retention it reads from a trace (`zgen.plan.planner`), the runtime the
orders it assumes without one (`zgen.runtime.plans.default_plan`).

Torch-free: `param_infos(model)` reads a model through `named_parameters`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from zgen.schedule.plan import ROOT, Unit
from zgen.schedule.units import assign, innermost

__all__ = ["ParamInfo", "param_infos", "Grouping", "group"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ParamInfo:
    """One parameter: its canonical name (first in `named_parameters()`), shape and aliases."""

    name: str
    shape: tuple[int, ...]
    numel: int
    aliases: tuple[str, ...] = ()  # other qualified names of the same tensor (tied weights)


def param_infos(model: Any) -> tuple[ParamInfo, ...]:
    """Every parameter of `model` once, in `named_parameters()` order, with the other names it is registered under."""
    names: dict[int, list[str]] = {}
    for name, p in model.named_parameters(remove_duplicate=False):
        names.setdefault(id(p), []).append(name)
    return tuple(
        ParamInfo(name=name, shape=tuple(p.shape), numel=p.numel(),
                  aliases=tuple(a for a in dict.fromkeys(names[id(p)]) if a != name))
        for name, p in model.named_parameters()
    )


@dataclass(frozen=True, slots=True)
class Grouping:
    """Units (the blocks in the order given, then the root) and the persistent parameters."""

    units: tuple[Unit, ...]
    persistent: tuple[str, ...]


def group(params: Sequence[ParamInfo], blocks: Sequence[str], threshold: int) -> Grouping:
    """Units, their tied externals and the persistent parameters (see the module docstring)."""
    persistent = tuple(p.name for p in params if p.numel <= threshold)
    keep_out = set(persistent)
    owned = {s.module: s.params for s in assign([p.name for p in params], blocks)}
    # Blocks without parameters of their own stay candidates: a tied parameter may make them need a unit.
    candidates = [(m, tuple(p for p in owned.get(m, ()) if p not in keep_out)) for m in [*blocks, ROOT]]
    owner = {p: m for m, ps in candidates for p in ps}
    external: dict[str, list[str]] = {m: [] for m, _ in candidates}
    for info in params:
        for alias in info.aliases:
            holder = innermost(alias.rpartition(".")[0], external)
            if info.name in owner and holder is not None and holder != owner[info.name] \
                    and info.name not in external[holder]:
                external[holder].append(info.name)
    units = tuple(Unit(module=m, params=ps, external=tuple(external[m])) for m, ps in candidates
                  if ps or external[m])
    return Grouping(units, persistent)
