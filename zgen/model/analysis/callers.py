"""How the file's own parents call a module class: which optional inputs they fix by the model's structure.

A U-Net decoder block takes `skip=None`; its parent walks its blocks and
passes `skips[i] if i < len(skips) else None`: the last stage gets no skip
on every rank, whatever the batch holds. Whether the block's `if skip is
not None:` runs its attention is then the architecture's decision, not the
data's. An input the parent hands on from its own arguments, or decides by
a presence test on one (`t if exists(times) else None`), stays the batch's.

`structural_inputs(index, cls, names, params)` reads, with `ast`, every call
of a module of class `cls` that a module class of this file holding one
makes (`self.block(...)`, `self.blocks[i](...)`, `for blk in self.blocks:`
/ `enumerate(...)` / `zip(...)` then `blk(...)`) and keeps the names that
every call passes by structure. With no such call found, none is kept.
"""

from __future__ import annotations

import ast

from ..program.index import ClassInfo, ModelIndex, memoised
from ..program.members import UNKNOWN_CLASS, Kind, facts_of
from .runs import ast_function, ast_loop_items, ast_nodes

__all__ = ["structural_inputs", "optional_inputs"]

_DEPTH = 3  # how many local assignments a passed value is followed through


@memoised
def structural_inputs(
    index: ModelIndex, cls: ClassInfo, names: frozenset[str], params: tuple[str, ...]
) -> frozenset[str]:
    """The `names` (among the positional `params` of `cls.forward`, `self` left out) every call of a `cls` module
    by a parent of this file passes by the model's structure, not from the parent's own inputs."""
    verdict = {name: True for name in names}
    seen = False
    for holder in index.module_classes():
        if holder is cls:
            continue
        builds = f"{cls.name}(" in "".join(method.text for method in holder.init_methods)
        if not builds:
            continue  # a parent that builds its blocks names their class (read from the text, before any parse)
        held = {
            member.name for member in facts_of(holder).members.values()
            if member.kind in (Kind.MODULE, Kind.CONTAINER) and (
                cls.name in member.classes
                # `blocks[key] = Block(...)` ... `self.blocks = nn.ModuleDict(blocks)`: filled from a local
                or (builds and member.kind == Kind.CONTAINER and (not member.classes or UNKNOWN_CLASS in member.classes))
            )
        }
        if not held:
            continue
        for method in holder.all_methods():
            if not any(f"self.{name}" in method.text for name in held):
                continue
            func = ast_function(method)
            if func is None:
                continue
            nodes = ast_nodes(method.index, func)
            for call in _calls_of(nodes, held):
                seen = True
                if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
                    return frozenset()
                for name in names:
                    value = _passed(call, name, params)
                    if value is not None and not _by_structure(value, func, nodes, _DEPTH):
                        verdict[name] = False
    return frozenset(name for name, fixed in verdict.items() if fixed) if seen else frozenset()


def _calls_of(nodes: tuple[ast.AST, ...], held: set[str]) -> list[ast.Call]:
    """Calls among a function's `nodes` of `self.<held>`, an item of it, or a loop variable walking it."""
    walkers: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.For):
            walkers |= _walking(node.target, node.iter, held)
    found = []
    for node in nodes:
        if not isinstance(node, ast.Call):
            continue
        target = node.func
        if isinstance(target, ast.Attribute) and target.attr == "forward":
            target = target.value
        if isinstance(target, ast.Subscript):
            target = target.value
        if _held(target, held) or (isinstance(target, ast.Name) and target.id in walkers):
            found.append(node)
    return found


def _walking(target: ast.expr, iterable: ast.expr, held: set[str]) -> set[str]:
    """The loop variables of `for target in iterable` that take the items of a held container."""
    return {name for name, items in ast_loop_items(target, iterable) if _held(items, held)}


def _held(expr: ast.expr, held: set[str]) -> bool:
    return (
        isinstance(expr, ast.Attribute) and expr.attr in held
        and isinstance(expr.value, ast.Name) and expr.value.id == "self"
    )


def _passed(call: ast.Call, name: str, params: tuple[str, ...]) -> ast.expr | None:
    """What the call passes for parameter `name` (None: left to its default, the same on every call)."""
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    position = params.index(name) if name in params else len(call.args)
    return call.args[position] if position < len(call.args) else None


def _by_structure(value: ast.expr, func: ast.FunctionDef, nodes: tuple[ast.AST, ...], depth: int) -> bool:
    """Is `value` fixed by the parent's structure: `None`, an item of a list it walks (`skips[i]`), a choice on a
    position (`skips[i] if i < len(skips) else None`); not one of its inputs handed on, nor chosen by a presence
    test on one?"""
    inputs = _inputs(func)
    if isinstance(value, ast.Constant):
        return True
    if isinstance(value, ast.Name):
        if value.id in inputs:
            return False  # the parent's own input, handed on: whatever its caller gave
        bound = [
            node.value for node in nodes
            if isinstance(node, ast.Assign) and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name) and node.targets[0].id == value.id
        ]
        return bool(bound) and depth > 0 and all(_by_structure(v, func, nodes, depth - 1) for v in bound)
    if isinstance(value, ast.IfExp):
        if _presence(value.test) or _mentions(value.test, optional_inputs(func)):
            return False
        return _by_structure(value.body, func, nodes, depth) and _by_structure(value.orelse, func, nodes, depth)
    return not _mentions(value, optional_inputs(func))


def _presence(test: ast.expr) -> bool:
    """`x is None` / `x is not None` / `exists(x)` / a bare name: a test of whether a value was given."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    if isinstance(test, ast.BoolOp):
        return any(_presence(part) for part in test.values)
    if isinstance(test, ast.Name):
        return True
    if isinstance(test, ast.Call) and len(test.args) == 1 and isinstance(test.args[0], ast.Name):
        return True  # `exists(x)`, `bool(x)`
    return isinstance(test, ast.Compare) and any(
        isinstance(op, (ast.Is, ast.IsNot)) and isinstance(c, ast.Constant) and c.value is None
        for op, c in zip(test.ops, test.comparators)
    )


def _inputs(func: ast.FunctionDef) -> set[str]:
    args = func.args
    return {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)} - {"self"}


def optional_inputs(func: ast.FunctionDef) -> set[str]:
    """The inputs of a function that default to `None`, or to an empty list, tuple or dict (`conditions=[]`: a
    caller that gives none gives an empty one)."""
    args = func.args
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    return {a.arg for a, d in pairs if isinstance(d, ast.Constant) and d.value is None or _empty(d)}


def _empty(default: ast.expr) -> bool:
    return isinstance(default, (ast.List, ast.Tuple)) and not default.elts or isinstance(default, ast.Dict) and not default.keys


def _mentions(expr: ast.expr, names: set[str]) -> bool:
    return bool(names) and any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(expr))
