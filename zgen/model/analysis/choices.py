"""Which values an expression may evaluate to when it only chooses among others.

`self.ema_model or self.model`, `self.ema if use_ema else self.model` and a call of a function of the file that hands
back one of its arguments as it is (`default(self.ema_model, self.model)` with `def default(v, d): return v if
exists(v) else d`) each evaluate to one of their options, unchanged. A local bound to such a choice between models
holds one of those models, and calling it runs it (`calls.ModuleCalls`, `calls.HeldCalls` ask).
"""

from __future__ import annotations

from ..program.index import ModelIndex, memoised
from ..program.tree import choice_leaves, cst, parameter_for, parameter_names, walk

__all__ = ["options"]


def options(index: ModelIndex, expr: cst.BaseExpression) -> tuple[cst.BaseExpression, ...]:
    """The expressions `expr` may evaluate to unchanged, when it is a choice among them (else empty)."""
    if isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, cst.Or):
        return (*_leaves(index, expr.left), *_leaves(index, expr.right))
    if isinstance(expr, cst.IfExp):
        return (*_leaves(index, expr.body), *_leaves(index, expr.orelse))
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name):
        info = index.function_info(expr.func.value)
        if info is None or info.node is None:
            return ()
        handed_back = returned_parameters(index, expr.func.value)
        found: list[cst.BaseExpression] = []
        for position, arg in enumerate(expr.args):
            if arg.star:
                continue
            param = arg.keyword.value if arg.keyword is not None else parameter_for(info.node, expr, position)
            if param in handed_back:
                found.extend(_leaves(index, arg.value))
        return tuple(found)
    return ()


def _leaves(index: ModelIndex, expr: cst.BaseExpression) -> tuple[cst.BaseExpression, ...]:
    nested = options(index, expr)
    return nested if nested else (expr,)


@memoised
def returned_parameters(index: ModelIndex, name: str) -> frozenset[str]:
    """Parameters that the function `name` of this file returns as they are, when every value it returns is one of
    them or a value computed from them (`return v if exists(v) else d()`): a pass-through choice. Empty when some
    return hands back anything else (`return v is not None`, `return fn(v)`, a parameter rebound in the body) or it
    returns nothing."""
    info = index.function_info(name)
    node = info.node if info is not None else None
    if not isinstance(node, cst.FunctionDef):
        return frozenset()
    params = set(parameter_names(node))
    found: set[str] = set()
    returns = 0
    nodes = list(walk(node.body))
    for inner in nodes:
        if isinstance(inner, (cst.FunctionDef, cst.Lambda)):
            return frozenset()  # (a nested function's returns are not this one's; rare in a pass-through helper)
        if isinstance(inner, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For)):
            target = inner.target
            if isinstance(target, cst.Name):  # `layers = [l for l in layers if keep]`: no longer what was given
                params.discard(target.value)
    for inner in nodes:
        if not isinstance(inner, cst.Return):
            continue
        returns += 1
        leaves = choice_leaves(inner.value) if inner.value is not None else []
        named = [leaf.value for leaf in leaves if isinstance(leaf, cst.Name) and leaf.value in params]
        if not named:
            return frozenset()
        found.update(named)
    return frozenset(found) if returns else frozenset()
