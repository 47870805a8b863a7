"""The default plan, and checking a plan against the model it is applied to.

`default_plan(model, config)` is what the engine uses when it is given no
plan: the planner's own grouping (`zgen.schedule.grouping.group` over the
block modules of `zgen.schedule.units`: parameters at or below
`stage3_param_persistence_threshold` elements persistent, as DeepSpeed does,
tied parameters external where they are registered), the root unit kept
gathered between forward and backward, and the planner's prefetch rule
(`zgen.schedule.prefetch`) over `stage3_prefetch_bucket_size`. Without a trace
the orders are assumed: the blocks run in module order.

Order conventions (the planner follows the same ones):

* `forward_order` lists units in the order their forward *starts* (the root
  first, since its forward encloses everything else);
* `backward_order` lists units in the order their backward starts, which is
  the reverse of the order their forwards *finish* (the root first again).

`bind(model, plan)` resolves every name in the plan against the model and
returns the `Binding` the engine works from.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from torch import nn

from zgen.deepspeed_defaults import defaults
from zgen.errors import ZgenError
from zgen.schedule.grouping import group, param_infos
from zgen.schedule.plan import ROOT, Plan, PlanError
from zgen.schedule.prefetch import prefetch_lists
from zgen.schedule.units import block_modules, innermost

from .config import zero_settings

__all__ = ["default_plan", "bind", "Binding", "BoundUnit", "PERSISTENT"]

PERSISTENT = "<persistent>"  # label of the pseudo-unit holding the plan's persistent parameters
# DeepSpeed's default `stage3_max_live_parameters`: the default plan's prefetch stays under it.
MAX_LIVE_PARAMETERS = defaults()["zero_optimization.stage3_max_live_parameters"]


def default_plan(model: nn.Module, config: Any = None) -> Plan:
    """The plan the engine derives when given none (see the module docstring)."""
    threshold, bucket = zero_settings(config)
    params = param_infos(model)
    grouping = group(params, block_modules(model), threshold)
    # Forward start order: the root's forward encloses the blocks. The root stays gathered between its
    # forward and backward (its backward starts first).
    units = tuple(replace(u, reshard_after_forward=False) for u in grouping.units if u.module == ROOT) \
        + tuple(u for u in grouping.units if u.module != ROOT)
    forward = tuple(u.module for u in units)
    backward = forward[:1] + tuple(reversed(forward[1:])) if forward and forward[0] == ROOT else tuple(reversed(forward))
    numel = {p.name: p.numel for p in params}
    size = {u.module: sum(numel[p] for p in u.params) for u in units}
    draft = Plan(units=units, forward_order=forward, backward_order=backward, persistent=grouping.persistent)
    forward_prefetch, backward_prefetch = prefetch_lists(draft, size, bucket, MAX_LIVE_PARAMETERS)
    if backward and backward[0] == ROOT:
        # The root's backward starts with the loss and output head, where activation memory peaks;
        # the next unit is gathered when its own backward starts instead.
        backward_prefetch = ((),) + backward_prefetch[1:]
    return Plan(
        units=units,
        forward_order=forward,
        backward_order=backward,
        forward_prefetch=forward_prefetch,
        backward_prefetch=backward_prefetch,
        persistent=grouping.persistent,
        notes=("default plan: one unit per repeated block of the model's stacks (zgen.schedule.units), root first",),
    )


def _canonical_names(model: nn.Module) -> dict[int, str]:
    return {id(p): n for n, p in model.named_parameters()}


@dataclass(slots=True)
class BoundUnit:
    """A plan unit resolved against the model."""

    label: str
    module: nn.Module | None
    module_name: str | None
    params: list[tuple[str, nn.Parameter]]
    external: list[str]
    reshard_after_forward: bool
    sites: list[tuple[nn.Module, str, str]] = field(default_factory=list)  # (module, attr, canonical) to install


@dataclass(slots=True)
class Binding:
    """Everything the engine needs to know about how the plan maps onto the model."""

    units: list[BoundUnit]
    persistent: BoundUnit | None
    owner: dict[str, str]  # canonical parameter name -> unit label
    sites: dict[str, list[tuple[nn.Module, str]]]  # canonical name -> every (module, attr) holding it


def bind(model: nn.Module, plan: Plan, world_size: int) -> Binding:
    """Resolve `plan` against `model`; raise `ZgenError` where they disagree."""
    try:
        plan.validate()
    except PlanError as e:
        raise ZgenError(f"invalid plan: {e}") from None
    if plan.world_size is not None and plan.world_size != world_size:
        raise ZgenError(
            f"the plan was made for world size {plan.world_size} but this job has {world_size} ranks",
            help=f"regenerate it with `zgen plan --world-size {world_size}`",
        )
    canonical = _canonical_names(model)
    alias = {n: canonical[id(p)] for n, p in model.named_parameters(remove_duplicate=False)}
    params = dict(model.named_parameters())
    modules = dict(model.named_modules())

    def resolve(name: str, where: str) -> str:
        if name not in alias:
            raise ZgenError(f"the plan's {where} names parameter `{name}`, which the model does not have")
        return alias[name]

    owner: dict[str, str] = {}
    units: list[BoundUnit] = []
    for u in plan.units:
        if u.module not in modules:
            raise ZgenError(f"the plan has a unit for module `{u.label}`, which the model does not have")
        names = []
        for n in u.params:
            c = resolve(n, f"unit `{u.label}`")
            if c in owner:
                raise ZgenError(f"parameter `{c}` is in unit `{owner[c]}` and in unit `{u.label}` (tied names count once)")
            owner[c] = u.label
            names.append(c)
        units.append(
            BoundUnit(
                label=u.label,
                module=modules[u.module],
                module_name=u.module,
                params=[(c, params[c]) for c in names],
                external=[resolve(n, f"unit `{u.label}` external") for n in u.external],
                reshard_after_forward=u.reshard_after_forward,
            )
        )
    pers_names = []
    for n in plan.persistent:
        c = resolve(n, "persistent list")
        if c in owner:
            raise ZgenError(f"parameter `{c}` is persistent and also in unit `{owner[c]}`")
        owner[c] = PERSISTENT
        pers_names.append(c)
    missing = [n for n in params if n not in owner]
    if missing:
        shown = ", ".join(f"`{n}`" for n in missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise ZgenError(
            f"the plan does not place {len(missing)} parameter(s): {shown}",
            help="every parameter must belong to one unit or be persistent; regenerate the plan for this model",
        )
    persistent = (
        BoundUnit(PERSISTENT, None, None, [(c, params[c]) for c in pers_names], [], False) if pers_names else None
    )
    sites = _sites(model, canonical)
    _assign_sites(model, units, persistent, owner, canonical)
    for u in units:
        # An external read may go through the owner's own module (a stored reference), so the
        # unit installs its externals wherever they are registered; sites already holding a
        # gathered view are skipped at run time.
        have = {(id(m), a) for m, a, _ in u.sites}
        u.sites.extend((m, a, n) for n in u.external for m, a in sites[n] if (id(m), a) not in have)
    return Binding(units, persistent, owner, sites)


def _sites(model: nn.Module, canonical: dict[int, str]) -> dict[str, list[tuple[nn.Module, str]]]:
    out: dict[str, list[tuple[nn.Module, str]]] = {}
    seen = set()
    for _, mod in model.named_modules(remove_duplicate=False):
        for attr, p in mod._parameters.items():
            if p is None or (id(mod), attr) in seen:
                continue
            seen.add((id(mod), attr))
            out.setdefault(canonical[id(p)], []).append((mod, attr))
    return out


def _assign_sites(
    model: nn.Module,
    units: list[BoundUnit],
    persistent: BoundUnit | None,
    owner: dict[str, str],
    canonical: dict[int, str],
) -> None:
    """Give each (module, attr) holding a parameter to the unit that installs it during forward."""
    by_module = {u.module_name: u for u in units}
    seen = set()
    for mod_name, mod in model.named_modules(remove_duplicate=False):
        terr = innermost(mod_name, by_module)
        for attr, p in mod._parameters.items():
            if p is None or (id(mod), attr) in seen:
                continue
            seen.add((id(mod), attr))
            name = canonical[id(p)]
            if owner[name] == PERSISTENT:
                persistent.sites.append((mod, attr, name))
                continue
            unit = by_module.get(terr) if terr is not None else None
            if unit is None:
                raise ZgenError(
                    f"parameter `{name}` (as `{mod_name}.{attr}`) is used by a module outside every unit of the plan",
                    help="make it persistent, or add a unit around the module that uses it",
                )
            if owner[name] != unit.label and name not in unit.external:
                raise ZgenError(
                    f"parameter `{name}` of unit `{owner[name]}` is also registered as `{mod_name}.{attr}` "
                    f"inside unit `{unit.label}`, which does not list it as external",
                    help=f"add `{name}` to the `external` list of unit `{unit.label}`",
                )
            unit.sites.append((mod, attr, name))
