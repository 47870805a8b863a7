"""What a file's own constructions of a class pass for one of its constructor parameters.

A wrapper that takes a callable (`RandomApply(fn, p)`, `Residual(block)`)
cannot tell from its own `__init__` whether `fn` is a module with
parameters. When the file builds the wrapper itself, its constructions say:
`RandomApply(T.ColorJitter(0.8, 0.8, 0.8, 0.2), p=0.3)` hands it a
transform, `SubModule(self, indices)` in a method of `FNOBlocks` the
`FNOBlocks` building it. `passed_classes` gives the classes every construction passes,
read from the skeleton's `ast` (no libcst parse), or None when some
construction passes something else (a name, an expression), leaves the
parameter to its default, or the file builds the class nowhere.
"""

from __future__ import annotations

import ast

from .index import ModelIndex, memoised
from .skeleton import dotted

__all__ = ["passed_classes", "constructions_of"]


@memoised
def passed_classes(index: ModelIndex, cls_name: str, param: str, position: int) -> tuple[str, ...] | None:
    """The qualified classes the file's constructions of `cls_name` build for parameter `param`
    (at `position` after `self`), when each passes a constructor call there; else None."""
    if f"{cls_name}(" not in index.source:
        return None
    calls = _constructions(index).get(cls_name)
    if not calls:
        return None
    found: list[str] = []
    for node in calls:
        value = _argument(node, param, position)
        if value is None:
            return None  # a default, or a value spread from `*args`/`**kwargs`: not known
        if isinstance(value, ast.Name) and value.id == "self":
            # `SubModule(self, indices)` in a method of a class: an instance of that class (or of a subclass)
            qualified = _enclosing_class(index, node.lineno)
            if qualified is None:
                return None
            if qualified not in found:
                found.append(qualified)
            continue
        if not isinstance(value, ast.Call):
            return None
        written = dotted(value.func)
        if written is None:
            return None
        qualified = index.qualify(written)
        if qualified not in found:
            found.append(qualified)
    return tuple(found) or None


def constructions_of(index: ModelIndex, cls_name: str) -> tuple[ast.Call, ...]:
    """The file's calls of its class `cls_name` by name (`MonotonicLinear(1, hidden_dim)`): what each passes it."""
    if f"{cls_name}(" not in index.source:
        return ()
    return tuple(_constructions(index).get(cls_name, ()))


def _enclosing_class(index: ModelIndex, line: int) -> str | None:
    """The innermost class of the file whose lines hold `line`."""
    spans = [info.span for info in index.classes.values() if info.span.start <= line <= info.span.end]
    return max(spans, key=lambda span: span.start).name if spans else None


@memoised
def _constructions(index: ModelIndex) -> dict[str, list[ast.Call]]:
    """The calls of each class of the file by its name (`RandomApply(...)`), from one walk of the file."""
    tree = index.skeleton.tree
    names = set(index.classes)
    found: dict[str, list[ast.Call]] = {}
    if tree is None or not names:
        return found
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names:
            found.setdefault(node.func.id, []).append(node)
    return found


def _argument(call: ast.Call, param: str, position: int) -> ast.expr | None:
    for keyword in call.keywords:
        if keyword.arg == param:
            return keyword.value
        if keyword.arg is None:
            return None
    if any(isinstance(arg, ast.Starred) for arg in call.args[: position + 1]):
        return None
    return call.args[position] if position < len(call.args) else None
