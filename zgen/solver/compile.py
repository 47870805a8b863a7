"""Translate a typed rule expression into a z3 term.

Integers stay integers (`//` and `%` are z3's integer `div` and `mod`, which
agree with Python's floor division for the positive divisors configs have), `/`
is real division, strings are z3 strings. `lower(k)` needs a finite set of
values, so a string key's variable ranges over the values its rules mention
plus the written and default values (`Symbols.domain`).
"""

from __future__ import annotations

from typing import Protocol

import z3

from zgen.solver import expr as E

__all__ = ["Symbols", "to_z3"]


class Symbols(Protocol):
    """What `to_z3` needs: a variable and a presence flag per key, `"auto"` flags, string domains."""
    def var(self, name: str) -> z3.ExprRef: ...

    def has(self, name: str) -> z3.BoolRef: ...

    def is_auto(self, name: str) -> bool: ...

    def domain(self, name: str) -> list[str]: ...

    def resolve(self, name: str) -> str | None: ...


def to_z3(node: E.Node, sym: Symbols) -> z3.ExprRef:
    """The z3 term for `node` (which has passed `expr.typecheck`)."""
    if isinstance(node, E.Num):
        return z3.IntVal(node.value) if isinstance(node.value, int) else z3.RealVal(repr(node.value))
    if isinstance(node, E.Str):
        return z3.StringVal(node.value)
    if isinstance(node, E.BoolLit):
        return z3.BoolVal(node.value)
    if isinstance(node, E.Name):
        return sym.var(node.name)
    if isinstance(node, E.Unary):
        inner = to_z3(node.operand, sym)
        return z3.Not(inner) if node.op == "not" else -inner
    if isinstance(node, E.Call):
        return _call(node, sym)
    if isinstance(node, E.ListLit):
        raise TypeError("a list is only allowed on the right of `in`")
    assert isinstance(node, E.Binary)
    if node.op == "in":
        left = to_z3(node.left, sym)
        assert isinstance(node.right, E.ListLit)
        items = [_coerce(to_z3(i, sym), left) for i in node.right.items]
        return z3.Or([left == i for i in items]) if items else z3.BoolVal(False)
    left, right = to_z3(node.left, sym), to_z3(node.right, sym)
    op = node.op
    if op == "and":
        return z3.And(left, right)
    if op == "or":
        return z3.Or(left, right)
    if op in ("==", "!=", "<", "<=", ">", ">=", "+", "-", "*"):
        left, right = _unify(left, right)
        return {
            "==": lambda: left == right,
            "!=": lambda: left != right,
            "<": lambda: left < right,
            "<=": lambda: left <= right,
            ">": lambda: left > right,
            ">=": lambda: left >= right,
            "+": lambda: left + right,
            "-": lambda: left - right,
            "*": lambda: left * right,
        }[op]()
    if op == "/":
        return _real(left) / _real(right)
    if op == "//":
        return left / right  # z3: integer division on Int terms
    return left % right


def _call(node: E.Call, sym: Symbols) -> z3.ExprRef:
    if node.func == "present":
        return sym.has(node.args[0].name)
    if node.func == "auto":
        return z3.BoolVal(sym.is_auto(node.args[0].name))
    if node.func == "lower":
        arg = node.args[0]
        if isinstance(arg, E.Str):
            return z3.StringVal(arg.value.lower())
        if not isinstance(arg, E.Name):
            raise TypeError("`lower()` takes a string key or literal")
        term = sym.var(arg.name)
        out: z3.ExprRef = term
        for value in sym.domain(arg.name):
            out = z3.If(term == z3.StringVal(value), z3.StringVal(value.lower()), out)
        return out
    args = [to_z3(a, sym) for a in node.args]
    if node.func == "if":
        a, b = _unify(args[1], args[2])
        return z3.If(args[0], a, b)
    if node.func == "abs":
        return z3.If(args[0] >= 0, args[0], -args[0])
    a, b = _unify(args[0], args[1])
    return z3.If(a <= b, a, b) if node.func == "min" else z3.If(a >= b, a, b)


def _real(t: z3.ExprRef) -> z3.ExprRef:
    return z3.ToReal(t) if z3.is_int(t) else t


def _unify(a: z3.ExprRef, b: z3.ExprRef) -> tuple[z3.ExprRef, z3.ExprRef]:
    if z3.is_int(a) and z3.is_real(b):
        return z3.ToReal(a), b
    if z3.is_real(a) and z3.is_int(b):
        return a, z3.ToReal(b)
    return a, b


def _coerce(item: z3.ExprRef, like: z3.ExprRef) -> z3.ExprRef:
    if z3.is_real(like) and z3.is_int(item):
        return z3.ToReal(item)
    return item
