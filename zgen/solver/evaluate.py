"""Evaluate rule expressions on concrete values: the fast path, messages, and the world-size sweep.

Semantics match the z3 translation in `zgen.solver.compile` for the values a
config can hold: `//` and `%` are floor division and modulo, `/` is real
division. A name whose value is unknown (an unsolved `"auto"`, an invalid value,
a launch fact nobody gave) makes the result `None`, and so does division by
zero; callers treat `None` as "cannot tell without the solver".

Expressions are compiled once into nested closures, which is what makes
checking every world size up to the bound cheap.
"""

from __future__ import annotations

import operator
from typing import Callable, Mapping

from zgen.solver import expr as E

__all__ = ["evaluate", "compiled", "Env"]


class Env:
    """Concrete values by canonical name, and which keys are present (written or given)."""

    __slots__ = ("values", "present", "resolve", "auto")

    def __init__(self, values: Mapping[str, object], present: Callable[[str], bool],
                 resolve: Callable[[str], str | None], auto: Callable[[str], bool] = lambda k: False) -> None:
        self.values = values
        self.present = present
        self.resolve = resolve
        self.auto = auto


Fn = Callable[[Env], object]
_CACHE: dict[int, tuple[E.Node, Fn]] = {}

_ARITH = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
          "//": operator.floordiv, "%": operator.mod}
_COMPARE = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
            ">=": operator.ge, "in": lambda a, b: a in b}


def evaluate(node: E.Node, env: Env) -> object:
    """The value of `node`, or None when it depends on something unknown."""
    return compiled(node)(env)


def compiled(node: E.Node) -> Fn:
    """`node` as a closure over an `Env` (cached per node)."""
    hit = _CACHE.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    fn = _compile(node)
    _CACHE[id(node)] = (node, fn)
    return fn


def _compile(node: E.Node) -> Fn:
    if isinstance(node, (E.Num, E.Str, E.BoolLit)):
        value = node.value
        return lambda env: value
    if isinstance(node, E.Name):
        name = node.name
        cache: dict[int, str] = {}

        def get(env: Env) -> object:
            key = cache.get(id(env.resolve))
            if key is None:
                key = env.resolve(name) or name
                cache[id(env.resolve)] = key
            return env.values.get(key)

        return get
    if isinstance(node, E.ListLit):
        items = [compiled(i) for i in node.items]

        def lst(env: Env) -> object:
            out = [f(env) for f in items]
            return None if any(v is None for v in out) else out

        return lst
    if isinstance(node, E.Call):
        return _call(node)
    if isinstance(node, E.Unary):
        inner = compiled(node.operand)
        if node.op == "not":
            return lambda env: None if (v := inner(env)) is None else not v
        return lambda env: None if (v := inner(env)) is None else -v
    assert isinstance(node, E.Binary)
    left, right = compiled(node.left), compiled(node.right)
    if node.op in ("and", "or"):
        decides = node.op == "or"  # the operand value that settles the result alone (False for and)

        def junction(env: Env) -> object:
            a = left(env)
            if a is decides:
                return decides
            b = right(env)
            if b is decides:
                return decides
            return None if a is None or b is None else not decides

        return junction
    op = _COMPARE.get(node.op) or _ARITH[node.op]

    def binary(env: Env) -> object:
        a = left(env)
        if a is None:
            return None
        b = right(env)
        if b is None:
            return None
        try:
            return op(a, b)
        except (ZeroDivisionError, TypeError):
            return None

    return binary


def _call(node: E.Call) -> Fn:
    if node.func in ("present", "auto"):
        name = node.args[0].name
        if node.func == "present":
            return lambda env: env.present(name)
        return lambda env: env.auto(name)
    args = [compiled(a) for a in node.args]
    if node.func == "if":
        cond, a, b = args

        def branch(env: Env) -> object:
            c = cond(env)
            if c is None:
                return None
            return a(env) if c else b(env)

        return branch
    fn = {"lower": lambda x: x.lower(), "min": min, "max": max, "abs": abs}[node.func]

    def call(env: Env) -> object:
        values = [f(env) for f in args]
        if any(v is None for v in values):
            return None
        return fn(*values)

    return call
