"""The ahead-of-time stage-3 schedule: which parameters form a unit, and when each is gathered.

A `Plan` is what the planner (`zgen plan`, `zgen emit`) produces and what
`zgen.runtime.initialize(plan=...)` consumes. It is plain data: no torch
import, JSON round-trip, validated once when loaded.

Vocabulary
----------
* A *unit* is the set of parameters gathered and freed together. It is attached
  to one module (by fully qualified name, `""` for the root): the unit is
  gathered before that module's forward and, in backward, before its gradient
  is computed. It owns `params` (fully qualified parameter names as
  `named_parameters()` yields them, tied parameters under their first name).
* `external` lists parameters owned by another unit that this unit's forward
  also reads (e.g. a tied embedding used by an output projection inside this
  unit); the runtime keeps their owner gathered while this unit runs.
* `persistent` parameters belong to no unit: they stay gathered for the whole
  step (small norms and biases below `stage3_param_persistence_threshold`).
* `forward_order` / `backward_order` are unit modules in the order they run; a
  module may appear more than once when it is called more than once.
* `forward_prefetch[i]` lists the units whose all-gather is issued when
  `forward_order[i]` starts (likewise for backward); it is how prefetch bucket
  size and max live parameters are enforced ahead of time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

__all__ = ["Unit", "Plan", "PlanError", "ROOT"]

ROOT = ""  # the module name of the root module
PLAN_FORMAT_VERSION = 1


class PlanError(ValueError):
    """A plan that is inconsistent in itself or does not match the model it is applied to."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Unit:
    """Parameters gathered and freed together around one module's forward and backward."""

    module: str
    params: tuple[str, ...]
    external: tuple[str, ...] = ()
    reshard_after_forward: bool = True

    @property
    def label(self) -> str:
        """The name used in messages and tables (`<root>` for the root module)."""
        return self.module or "<root>"


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """Units, their run order, and the prefetch schedule for one model."""

    units: tuple[Unit, ...]
    forward_order: tuple[str, ...]
    backward_order: tuple[str, ...]
    forward_prefetch: tuple[tuple[str, ...], ...] = ()
    backward_prefetch: tuple[tuple[str, ...], ...] = ()
    persistent: tuple[str, ...] = ()
    world_size: int | None = None
    notes: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        self.validate()

    # -- queries ---------------------------------------------------------
    def unit(self, module: str) -> Unit:
        for u in self.units:
            if u.module == module:
                return u
        raise PlanError(f"plan has no unit for module `{module or '<root>'}`")

    def owner_of(self) -> dict[str, str]:
        """Map each unit-owned parameter name to the module of its unit."""
        return {p: u.module for u in self.units for p in u.params}

    # -- consistency -----------------------------------------------------
    def validate(self) -> None:
        """Raise `PlanError` if the plan contradicts itself (not checked against a model)."""
        modules = [u.module for u in self.units]
        dup = sorted({m for m in modules if modules.count(m) > 1})
        if dup:
            raise PlanError(f"plan lists unit(s) {', '.join(repr(m) for m in dup)} more than once")
        seen: dict[str, str] = {}
        for u in self.units:
            for p in u.params:
                if p in seen:
                    raise PlanError(f"parameter `{p}` is in unit `{seen[p] or '<root>'}` and in unit `{u.label}`")
                seen[p] = u.module
        for p in self.persistent:
            if p in seen:
                raise PlanError(f"parameter `{p}` is persistent and also owned by unit `{seen[p] or '<root>'}`")
        known = set(modules)
        for what, order in (("forward_order", self.forward_order), ("backward_order", self.backward_order)):
            for m in order:
                if m not in known:
                    raise PlanError(f"{what} names `{m or '<root>'}`, which is not a unit of the plan")
        for what, order, pre in (
            ("forward_prefetch", self.forward_order, self.forward_prefetch),
            ("backward_prefetch", self.backward_order, self.backward_prefetch),
        ):
            if pre and len(pre) != len(order):
                raise PlanError(f"{what} has {len(pre)} entries but its order has {len(order)}")
            for entry in pre:
                for m in entry:
                    if m not in known:
                        raise PlanError(f"{what} names `{m or '<root>'}`, which is not a unit of the plan")
        for u in self.units:
            for p in u.external:
                if p not in seen and p not in self.persistent:
                    raise PlanError(f"unit `{u.label}` lists external parameter `{p}`, which no unit owns")

    # -- serialisation ---------------------------------------------------
    def to_dict(self) -> dict:
        return {
            "format": PLAN_FORMAT_VERSION,
            "world_size": self.world_size,
            "units": [
                {
                    "module": u.module,
                    "params": list(u.params),
                    "external": list(u.external),
                    "reshard_after_forward": u.reshard_after_forward,
                }
                for u in self.units
            ],
            "forward_order": list(self.forward_order),
            "backward_order": list(self.backward_order),
            "forward_prefetch": [list(x) for x in self.forward_prefetch],
            "backward_prefetch": [list(x) for x in self.backward_prefetch],
            "persistent": list(self.persistent),
            "notes": list(self.notes),
        }

    def to_json(self, indent: int | None = 1) -> str:
        """Deterministic JSON (same plan, same bytes)."""
        return json.dumps(self.to_dict(), indent=indent, sort_keys=False)

    @classmethod
    def from_dict(cls, d: dict) -> Plan:
        try:
            if d.get("format", PLAN_FORMAT_VERSION) != PLAN_FORMAT_VERSION:
                raise PlanError(f"plan format {d.get('format')!r} is not supported (expected {PLAN_FORMAT_VERSION})")
            return cls(
                units=tuple(
                    Unit(
                        module=u["module"],
                        params=tuple(u["params"]),
                        external=tuple(u.get("external", ())),
                        reshard_after_forward=bool(u.get("reshard_after_forward", True)),
                    )
                    for u in d["units"]
                ),
                forward_order=tuple(d["forward_order"]),
                backward_order=tuple(d["backward_order"]),
                forward_prefetch=tuple(tuple(x) for x in d.get("forward_prefetch", ())),
                backward_prefetch=tuple(tuple(x) for x in d.get("backward_prefetch", ())),
                persistent=tuple(d.get("persistent", ())),
                world_size=d.get("world_size"),
                notes=tuple(d.get("notes", ())),
            )
        except (KeyError, TypeError) as e:
            raise PlanError(f"malformed plan: missing or wrong field {e}") from None

    @classmethod
    def from_json(cls, text: str) -> Plan:
        try:
            return cls.from_dict(json.loads(text))
        except json.JSONDecodeError as e:
            raise PlanError(f"plan is not valid JSON: {e}") from None
