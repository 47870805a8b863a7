"""Calls in `__init__` applied to modules that are already built (hence partitioned under zero.Init).

Shared by ZG104 and ZG105.
"""

from __future__ import annotations

import libcst as cst

from .flow import Flat, flat_of
from .index import ClassInfo, Kind, MethodInfo, ModelIndex
from .tree import access_path


def built_module(
    index: ModelIndex,
    cls: ClassInfo,
    method: MethodInfo,
    flat: Flat,
    expr: cst.BaseExpression,
    rank: int,
    at: cst.CSTNode,
) -> bool:
    """True if `expr`, used at node `at` of an `__init__`-reachable method, is a module built before `at`.

    That is: a call constructing a module with parameters (`nn.Conv1d(...)`),
    a submodule member assigned earlier (`self.conv`, `self.layers[0]`), or a
    local assigned from such a construction earlier in the method.
    """
    if isinstance(expr, cst.Call):
        kind, classes = index.classify(expr)
        return kind == Kind.MODULE and any(index.has_params(ref) for ref in classes)
    path = access_path(expr)
    if path is None:
        return False
    position = method.order.get(id(at), 0)
    if path.root == "self" and path.parts:
        member = cls.facts.members.get(path.parts[0])
        if member is None or member.kind not in (Kind.MODULE, Kind.CONTAINER):
            return False
        if not any(index.has_params(ref) is not False for ref in member.classes):
            return False
        return member.order < (rank, position)
    if path.parts:
        return False
    for node, _ctx in flat.nodes:  # `conv = nn.Conv1d(...)` earlier in the method
        if type(node) is cst.Assign and method.order.get(id(node), 0) < position:
            for target in node.targets:
                if isinstance(target.target, cst.Name) and target.target.value == path.root:
                    kind, classes = index.classify(node.value)
                    if kind == Kind.MODULE and isinstance(node.value, cst.Call):
                        return any(index.has_params(ref) for ref in classes)
    return False


def calls_on_built_modules(index: ModelIndex, trigger, names: frozenset[str]):
    """(method, call) for unguarded calls in `__init__` and its helpers whose function's last name is
    in `names` and whose first argument is a module built before the call."""
    for cls, method in index.methods("init", trigger):
        flat = flat_of(method)
        if flat is None:
            continue
        rank = next((i for i, m in enumerate(cls.init_methods) if m is method), 0)
        for node, ctx in flat.nodes:
            if type(node) is not cst.Call or ctx.guarded or not node.args:
                continue
            name = index.qualified_call(node) or ""
            if name.rsplit(".", 1)[-1] in names and built_module(
                index, cls, method, flat, node.args[0].value, rank, node
            ):
                yield method, node
