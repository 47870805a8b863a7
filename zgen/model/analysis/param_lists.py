"""Parameters of a `ParameterList`/`ParameterDict` child written in the `__init__` that built it, after it was built.

A `ParameterList` or `ParameterDict` is a module of its own: under `deepspeed.zero.Init` its parameters are
partitioned when *its* `__init__` returns, inside the parent's `__init__`. Initialising them afterwards
(`self.weights = ParameterList([...])`, then `for w in self.weights: nn.init.xavier_uniform_(w)`, or
`nn.init.zeros_(self.table["a"])`, or every parameter of `self.parameters()` once such a child exists) writes
partitioned placeholders: ZG103. Parameters made and initialised first and wrapped in the list afterwards, the
module's own `nn.Parameter`s, guarded code and code in a gather are safe.
"""

from __future__ import annotations

import re

from ..program.index import ClassInfo, MethodInfo, ModelIndex, memoised
from ..program.members import facts_of, parameter_container
from ..program.tree import access_path, cst
from .access import INIT, WRITE
from .effects import usage
from .flow import flat_of, loop_items

__all__ = ["ListWrite", "parameter_list_writes"]

_TEXT = re.compile(r"Parameter(?<!\wParameter)(?:List|Dict)\b")  # `\bParameter...`, word first (`program/trigger.py`)
# Iterations of the module's own parameters, which include a built child list's.
_OWN_WALKS = frozenset({"parameters", "named_parameters"})


class ListWrite:
    """One write of a parameter of a parameter list child built earlier in the same `__init__`."""

    __slots__ = ("method", "node", "list_name", "use", "op")

    def __init__(self, method: MethodInfo, node: cst.CSTNode, list_name: str, use: str, op: str) -> None:
        self.method, self.node, self.list_name, self.use, self.op = method, node, list_name, use, op


@memoised
def parameter_list_writes(index: ModelIndex) -> list[ListWrite]:
    """Writes and initialisations, in a module's `__init__` (and the helpers it calls), of parameters of a
    `ParameterList`/`ParameterDict` member after the statement that built it."""
    found: list[ListWrite] = []
    if not _TEXT.search(index.source) or index.other_framework:
        return found
    for cls in index.module_classes():
        if not _TEXT.search(cls.text):
            continue
        lists = _parameter_lists(index, cls)
        if lists:
            found += _writes(index, cls, lists)
    return found


def _parameter_lists(index: ModelIndex, cls: ClassInfo) -> dict[str, tuple[int, int]]:
    """Members built by a `ParameterList(...)`/`ParameterDict(...)` call -> when (method rank, node position)."""
    found: dict[str, tuple[int, int]] = {}
    for name, member in facts_of(cls).members.items():
        if member.order[0] >= 0 and parameter_container(index, cls, name):
            found[name] = member.order
    return found


def _writes(index: ModelIndex, cls: ClassInfo, lists: dict[str, tuple[int, int]]) -> list[ListWrite]:
    found: list[ListWrite] = []
    for rank, method in enumerate(cls.init_methods):
        if method.owner is not cls or not any(f"self.{name}" in method.text for name in lists) and (
            "parameters()" not in method.text
        ):
            continue
        flat = flat_of(method)
        if flat is None:
            continue

        def built_by(name: str, node: cst.CSTNode, flat=flat, rank=rank) -> bool:
            order = lists.get(name)
            return order is not None and order < (rank, flat.position.get(id(node), 0))

        def any_built(node: cst.CSTNode) -> bool:
            return any(built_by(name, node) for name in lists)

        items: dict[str, str] = {}  # loop variable -> the list (or "parameters()") whose items it takes
        for node, ctx in flat.nodes:
            if ctx.guarded:
                continue
            if type(node) in (cst.For, cst.CompFor):
                pairs = loop_items(node.target, node.iter)
                if isinstance(node.target, cst.Tuple) and not isinstance(node.iter, cst.Call):
                    # `for w1, w2 in self.weights`: a list of lists unpacked, every part one of its parameters
                    pairs = [(e.value, node.iter) for e in node.target.elements]
                for part, iterable in pairs:
                    source = _items_source(iterable, node, built_by, any_built) if isinstance(part, cst.Name) else None
                    if source is not None:
                        items[part.value] = source  # type: ignore[union-attr]
                    elif isinstance(part, cst.Name):
                        items.pop(part.value, None)
                continue
            source = None
            if type(node) is cst.Name and node.value in items:
                source = items[node.value]
            elif type(node) is cst.Subscript:
                path = access_path(node.value)
                if path is not None and path.root == "self" and len(path.parts) == 1 and built_by(path.parts[0], node):
                    source = f"self.{path.parts[0]}"
            if source is None:
                continue
            use, op = usage(index, flat, node)
            if use in (WRITE, INIT):
                found.append(ListWrite(method, node, source, use, op))
    return found


def _items_source(iterable: cst.BaseExpression, at: cst.CSTNode, built_by, any_built) -> str | None:
    """`self.X`, `self.X.values()`/`.items()`/`.parameters()` for a list built before `at`, or `self.parameters()`
    once one is: the text of what the loop walks."""
    if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute) and not iterable.args:
        method = iterable.func.attr.value
        owner = iterable.func.value
        if method in _OWN_WALKS and isinstance(owner, cst.Name) and owner.value == "self":
            return "self.parameters()" if any_built(at) else None
        if method not in ("values", "items", *_OWN_WALKS):
            return None
        iterable = owner
    path = access_path(iterable)
    if path is not None and path.root == "self" and len(path.parts) == 1 and built_by(path.parts[0], at):
        return f"self.{path.parts[0]}"
    return None
