"""Which modules get a stage-3 unit, and how `--units` patterns name them.

The default rule reads the module tree, whatever container holds the blocks:

* a *stack* is a container (`nn.Sequential`, `nn.ModuleList`, `nn.ModuleDict`,
  or a subclass) with repeated blocks: at least two children of one class
  that hold parameters (a wrapper around an encoder and a decoder, or around
  two different towers, is not a stack; the layer lists inside them are);
* stacks are taken largest first (by parameters), skipping any stack inside
  or around one already taken, and only while a stack holds at least
  `STACK_SHARE` of the parameters of the largest one (so an encoder-decoder
  gets both stacks, a two-tower model both towers, and no MLP inside a block
  becomes a stack);
* every child of a taken stack that holds parameters is a unit; a child that
  is itself a list or a dict (never called, so it has no forward to hook:
  nested layer lists) gives way to its own children, recursively;
* the root unit holds everything else (embeddings, final norm, output head).

The runtime's default plan and the planner both start from `block_modules`
and `assign` (through `zgen.schedule.grouping`), so a model trains with the
same units with or without `zgen plan`.

`--units` patterns name modules by qualified name: `*` matches within one
dot-separated part (`layers.*` is `layers.0`, `layers.1`, ..., not
`layers.0.mlp`), `**` across parts (`encoder.**.attn`), `?` one character,
`[seq]` one of a set. A matched list or dict gives way to its children as above.

Only names and shapes are read (the model may be on `meta`), and this module
does not import torch: it reads the module tree through its methods.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from zgen.errors import ZgenError
from zgen.schedule.plan import ROOT
from zgen.schedule.replay import inside

__all__ = ["UnitSpec", "STACK_SHARE", "module_numel", "stacks", "block_modules", "match_units", "assign", "innermost"]

# A second stack gets units only if it holds at least this share of the largest stack's parameters.
STACK_SHARE = 0.25

_CONTAINERS = ("Sequential", "ModuleList", "ModuleDict")
_NOT_CALLED = ("ModuleList", "ModuleDict")  # containers without a forward of their own


@dataclass(frozen=True, slots=True)
class UnitSpec:
    """A unit before scheduling: the module it hangs on and the parameters it owns."""

    module: str
    params: tuple[str, ...]


def module_numel(module: Any) -> int:
    """Elements of the module's parameters, tied ones counted once."""
    return sum(p.numel() for p in module.parameters())


def _is(module: Any, kinds: tuple[str, ...]) -> bool:
    return any(c.__name__ in kinds and c.__module__.startswith("torch.nn") for c in type(module).__mro__)


def _holds_params(module: Any) -> bool:
    return next(iter(module.parameters()), None) is not None


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def stacks(model: Any) -> list[str]:
    """Qualified names of the stacks whose children become units (see the module docstring)."""
    found = []
    for name, mod in model.named_modules():
        if _is(mod, _CONTAINERS):
            classes = [type(c) for c in mod.children() if _holds_params(c)]
            if any(classes.count(c) >= 2 for c in set(classes)):
                found.append((name, module_numel(mod)))
    if not found:
        return []
    largest = max(n for _, n in found)
    chosen: list[str] = []
    for name, numel in sorted(found, key=lambda f: -f[1]):
        if numel >= STACK_SHARE * largest and not any(inside(name, s) or inside(s, name) for s in chosen):
            chosen.append(name)
    order = {n: i for i, (n, _) in enumerate(model.named_modules())}
    return sorted(chosen, key=order.__getitem__)


def _called(model: Any, name: str) -> list[str]:
    """`name`, or where it is a list or dict that is never called, its children with parameters (recursively)."""
    mod = model.get_submodule(name) if name else model
    if not _is(mod, _NOT_CALLED):
        return [name]
    out = []
    for child_name, child in mod.named_children():
        if _holds_params(child):
            out.extend(_called(model, _join(name, child_name)))
    return out


def block_modules(model: Any, patterns: Sequence[str] = ()) -> list[str]:
    """Qualified names of the modules that get a unit, in module order (the root excluded)."""
    if patterns:
        hits = match_units(patterns, [n for n, _ in model.named_modules() if n])
    else:
        hits = [_join(s, c) for s in stacks(model)
                for c, child in (model.get_submodule(s) if s else model).named_children() if _holds_params(child)]
    out: list[str] = []
    for h in hits:
        out.extend(m for m in _called(model, h) if m not in out)
    order = {n: i for i, (n, _) in enumerate(model.named_modules())}
    return sorted(out, key=order.__getitem__)


def _regex(pattern: str) -> re.Pattern[str]:
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**.", i):
            out.append(r"(?:.*\.)?")  # any number of leading parts, none included
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append(r"[^.]*")
            i += 1
        elif pattern[i] == "?":
            out.append(r"[^.]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2:]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1 : end]
            # Ranges (`0-3`) keep their meaning: only a backslash, and a leading `^`, are escaped.
            # A set never matches the dot between parts, negated (`[!0]`) or not.
            negated = body.startswith("!")
            body = (body[1:] if negated else body).replace("\\", "\\\\")
            out.append(f"[^.{body}]" if negated else "[" + ("\\" + body if body.startswith("^") else body) + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))


def match_units(patterns: Sequence[str], names: Sequence[str]) -> list[str]:
    """The module names any pattern matches, in the order given; a pattern matching nothing is an error."""
    chosen: list[str] = []
    for pat in patterns:
        rx = _regex(pat)
        hits = [n for n in names if rx.fullmatch(n)]
        if not hits:
            raise ZgenError(
                f"`units` pattern `{pat}` matches no module of the model",
                help="patterns match qualified module names; `*` stays within one part, `**` crosses dots: "
                "e.g. `layers.*` or `encoder.block.*`",
            )
        chosen.extend(h for h in hits if h not in chosen)
    return chosen


def assign(names: Sequence[str], blocks: Sequence[str]) -> list[UnitSpec]:
    """Group parameter names into units: one per block module, then the root with the rest.

    A parameter belongs to the innermost block module above it (by qualified
    name), else to the root. Pass canonical names (as `named_parameters()`
    yields them), so a tied parameter is placed once. Blocks without
    parameters are left out; blocks are listed in the order given, the root last.
    """
    units = {*blocks, ROOT}
    owned: dict[str, list[str]] = {m: [] for m in [*blocks, ROOT]}
    for name in names:
        owned[innermost(name.rpartition(".")[0], units)].append(name)
    return [UnitSpec(m, tuple(owned[m])) for m in blocks if owned[m] and m != ROOT] + [UnitSpec(ROOT, tuple(owned[ROOT]))]


def innermost(module: str, units: Collection[str]) -> str | None:
    """The unit module enclosing `module` most closely, by qualified name (`""` is the root; None if none)."""
    parts = module.split(".") if module else []
    for i in range(len(parts), -1, -1):
        prefix = ".".join(parts[:i])
        if prefix in units:
            return prefix
    return None
