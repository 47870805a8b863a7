"""Default grouping of a model's parameters into stage-3 units.

One unit per child of the model's largest `nn.ModuleList` (by parameter
count: the transformer blocks), plus the root unit holding everything else
(embeddings, final norm, output head). Both the runtime (when given no plan)
and the planner start from this grouping, so a model trains the same way with
or without `zgen plan`.

Works on a model built on the `meta` device: only names and shapes are read.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

__all__ = ["UnitSpec", "module_numel", "largest_module_list", "default_units"]


@dataclass(frozen=True, slots=True)
class UnitSpec:
    """A unit before scheduling: the module it hangs on and the parameters it owns."""

    module: str
    params: tuple[str, ...]


def module_numel(module: nn.Module) -> int:
    """Elements of the module's parameters, tied ones counted once."""
    return sum(p.numel() for p in module.parameters())


def largest_module_list(model: nn.Module) -> str | None:
    """Qualified name of the `ModuleList` holding the most parameters (ties: the first), or None."""
    best, best_n = None, 0
    for name, mod in model.named_modules():
        if isinstance(mod, nn.ModuleList) and len(mod) > 0:
            n = module_numel(mod)
            if n > best_n:
                best, best_n = name, n
    return best


def default_units(model: nn.Module, block_modules: list[str] | None = None) -> list[UnitSpec]:
    """Group parameters into units: one per block module, then the root with the rest.

    `block_modules` overrides the blocks (qualified module names, in forward
    order); by default they are the children of `largest_module_list(model)`.
    Parameters are named as `model.named_parameters()` names them, so a tied
    parameter appears once, under its first name, in the unit that reaches it
    first in that order. Blocks are listed in module order with the root last.
    """
    if block_modules is None:
        ml = largest_module_list(model)
        block_modules = [] if ml is None else [f"{ml}.{i}" if ml else str(i) for i in range(len(model.get_submodule(ml)))]
    block_set = set(block_modules)
    owned: dict[str, list[str]] = {m: [] for m in block_modules}
    root: list[str] = []
    for pname, _ in model.named_parameters():
        owner = _deepest_block(pname, block_set)
        (owned[owner] if owner is not None else root).append(pname)
    units = [UnitSpec(m, tuple(owned[m])) for m in block_modules if owned[m]]
    units.append(UnitSpec("", tuple(root)))
    return units


def _deepest_block(param_name: str, blocks: set[str]) -> str | None:
    parts = param_name.split(".")[:-1]
    for i in range(len(parts), 0, -1):
        prefix = ".".join(parts[:i])
        if prefix in blocks:
            return prefix
    return None
