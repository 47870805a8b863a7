"""The rule language: a small, typed, Python-like expression syntax over config keys and launch facts.

    train_batch_size == train_micro_batch_size_per_gpu * gradient_accumulation_steps * world_size
    not (present(zero_optimization.offload_param) and zero_optimization.stage < 3)
    lower(optimizer.type) in ["adam", "adamw"]

Names are dotted config keys (`zero_optimization.stage`, any spelling DeepSpeed
accepts) or launch facts (`world_size`, `gpus_per_node`, `gpu_mem`, `params`).
Operators: `or and not`, comparisons `== != < <= > >= in` and `not in`,
arithmetic `+ - * / // %` (`//` and `%` are integer floor division and modulo,
`/` is real division). Functions: `present(k)` (the key is written, or the
launch fact is given), `auto(k)` (the key is `"auto"`), `lower(s)`,
`min(a, b)`, `max(a, b)`, `abs(a)`, `if(c, a, b)`.

`parse()` turns text into an AST of frozen nodes; `typecheck()` resolves names
through a `Names` table and gives every node a type (int, real, bool, str, or
list). Both raise `ExprError` with the column of the problem.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

__all__ = ["ExprError", "Node", "Num", "Str", "BoolLit", "Name", "Call", "Unary", "Binary", "ListLit", "parse",
           "typecheck", "names_in", "FUNCTIONS"]


class ExprError(Exception):
    """A syntax or type error in a rule expression; `column` is 1-based within the expression."""

    def __init__(self, message: str, column: int) -> None:
        super().__init__(message)
        self.message = message
        self.column = column


@dataclass(frozen=True, slots=True)
class Node:
    """Base of the expression AST; `col` is the 1-based column in the expression text."""
    col: int


@dataclass(frozen=True, slots=True)
class Num(Node):
    """An int or float literal."""
    value: int | float


@dataclass(frozen=True, slots=True)
class Str(Node):
    """A string literal."""
    value: str


@dataclass(frozen=True, slots=True)
class BoolLit(Node):
    """`true` or `false`."""
    value: bool


@dataclass(frozen=True, slots=True)
class Name(Node):
    """A dotted config key or a launch fact."""
    name: str


@dataclass(frozen=True, slots=True)
class Call(Node):
    """A call of one of `FUNCTIONS`."""
    func: str
    args: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Unary(Node):
    """`not x` or `-x`."""
    op: str  # "-" or "not"
    operand: Node


@dataclass(frozen=True, slots=True)
class Binary(Node):
    """A binary operator, comparison, `and`/`or` or `in`."""
    op: str
    left: Node
    right: Node


@dataclass(frozen=True, slots=True)
class ListLit(Node):
    """A list literal (only on the right of `in`)."""
    items: tuple[Node, ...]


_TOKEN = re.compile(
    r"""\s*(?:
        (?P<num>\d[\d_]*(?:\.\d+)?(?:[eE][-+]?\d+)?)
      | (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
      | (?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
      | (?P<op>//|==|!=|<=|>=|[-+*/%<>()\[\],])
    )""",
    re.VERBOSE,
)
_KEYWORDS = {"and", "or", "not", "in", "true", "false"}


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str
    text: str
    col: int


def _tokens(text: str) -> list[_Tok]:
    out: list[_Tok] = []
    i = 0
    while i < len(text):
        if text[i:].strip() == "":
            break
        m = _TOKEN.match(text, i)
        if m is None or m.end() == i:
            j = i + len(text[i:]) - len(text[i:].lstrip())
            raise ExprError(f"unexpected character `{text[j]}`", j + 1)
        kind = m.lastgroup or ""
        value = m.group(kind)
        col = m.start(kind) + 1
        if kind == "name" and value in _KEYWORDS:
            kind = "kw"
        out.append(_Tok(kind, value, col))
        i = m.end()
    out.append(_Tok("end", "", len(text) + 1))
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.toks = _tokens(text)
        self.i = 0

    def peek(self, *texts: str) -> bool:
        t = self.toks[self.i]
        return t.kind in ("op", "kw") and t.text in texts

    def take(self) -> _Tok:
        t = self.toks[self.i]
        self.i += 1
        return t

    def expect(self, text: str) -> _Tok:
        t = self.take()
        if t.text != text or t.kind not in ("op", "kw"):
            raise ExprError(f"expected `{text}`, found `{t.text or 'end of expression'}`", t.col)
        return t

    def expr(self) -> Node:
        left = self.conj()
        while self.peek("or"):
            t = self.take()
            left = Binary(t.col, "or", left, self.conj())
        return left

    def conj(self) -> Node:
        left = self.neg()
        while self.peek("and"):
            t = self.take()
            left = Binary(t.col, "and", left, self.neg())
        return left

    def neg(self) -> Node:
        if self.peek("not"):
            t = self.take()
            return Unary(t.col, "not", self.neg())
        return self.comparison()

    def comparison(self) -> Node:
        left = self.sum()
        if self.peek("==", "!=", "<", "<=", ">", ">=", "in"):
            t = self.take()
            return Binary(t.col, t.text, left, self.sum())
        if self.peek("not") and self.toks[self.i + 1].text == "in":
            t = self.take()
            self.take()
            return Unary(t.col, "not", Binary(t.col, "in", left, self.sum()))
        return left

    def sum(self) -> Node:
        left = self.term()
        while self.peek("+", "-"):
            t = self.take()
            left = Binary(t.col, t.text, left, self.term())
        return left

    def term(self) -> Node:
        left = self.unary()
        while self.peek("*", "/", "//", "%"):
            t = self.take()
            left = Binary(t.col, t.text, left, self.unary())
        return left

    def unary(self) -> Node:
        if self.peek("-"):
            t = self.take()
            return Unary(t.col, "-", self.unary())
        return self.atom()

    def atom(self) -> Node:
        t = self.take()
        if t.kind == "num":
            text = t.text.replace("_", "")
            if re.fullmatch(r"\d+", text):
                return Num(t.col, int(text))
            value = float(text)
            return Num(t.col, int(value) if value.is_integer() and "." not in text else value)
        if t.kind == "str":
            return Str(t.col, bytes(t.text[1:-1], "utf-8").decode("unicode_escape"))
        if t.kind == "kw" and t.text in ("true", "false"):
            return BoolLit(t.col, t.text == "true")
        if t.kind == "name":
            if self.peek("("):
                self.take()
                args: list[Node] = []
                if not self.peek(")"):
                    args.append(self.expr())
                    while self.peek(","):
                        self.take()
                        args.append(self.expr())
                self.expect(")")
                return Call(t.col, t.text, tuple(args))
            return Name(t.col, t.text)
        if t.kind == "op" and t.text == "(":
            inner = self.expr()
            self.expect(")")
            return inner
        if t.kind == "op" and t.text == "[":
            items: list[Node] = []
            if not self.peek("]"):
                items.append(self.expr())
                while self.peek(","):
                    self.take()
                    if self.peek("]"):
                        break
                    items.append(self.expr())
            self.expect("]")
            return ListLit(t.col, tuple(items))
        raise ExprError(f"expected a value, found `{t.text or 'end of expression'}`", t.col)


def parse(text: str) -> Node:
    """Parse one expression; ExprError on bad syntax."""
    p = _Parser(text)
    node = p.expr()
    t = p.toks[p.i]
    if t.kind != "end":
        raise ExprError(f"unexpected `{t.text}` after the end of the expression", t.col)
    return node


# -- types ------------------------------------------------------------------------------------------

# name -> (argument kinds, result) where kinds are: "key" (a config key or launch fact name),
# "num", "bool", "str", "any"; the result "num" means the type of the numeric arguments.
FUNCTIONS: dict[str, tuple[tuple[str, ...], str]] = {
    "present": (("key",), "bool"),
    "auto": (("key",), "bool"),
    "lower": (("str",), "str"),
    "min": (("num", "num"), "num"),
    "max": (("num", "num"), "num"),
    "abs": (("num",), "num"),
    "if": (("bool", "any", "any"), "any"),
}

_NUMERIC = ("int", "real")


def typecheck(node: Node, name_type: Callable[[str], str | None], types: dict[int, str] | None = None) -> dict[int, str]:
    """Types of every node (by `id`); `name_type(name)` gives a name's type or None if unknown.

    A name's type is int, real, bool, str, or `key` for a name usable only in
    `present()` (a section, or a parameter zgen does not type).
    """
    types = {} if types is None else types

    def go(n: Node) -> str:
        t = _type(n)
        types[id(n)] = t
        return t

    def need(n: Node, want: tuple[str, ...], what: str) -> str:
        t = go(n)
        if t not in want:
            raise ExprError(f"{what} must be {' or '.join(want)}, not {t}", n.col)
        return t

    def _type(n: Node) -> str:
        if isinstance(n, Num):
            return "int" if isinstance(n.value, int) else "real"
        if isinstance(n, Str):
            return "str"
        if isinstance(n, BoolLit):
            return "bool"
        if isinstance(n, Name):
            t = name_type(n.name)
            if t is None:
                raise ExprError(f"`{n.name}` is not a config key or launch fact zgen knows", n.col)
            if t == "key":
                raise ExprError(f"`{n.name}` has no value zgen can reason about; use it only in `present()`", n.col)
            return t
        if isinstance(n, ListLit):
            kinds = {go(i) for i in n.items}
            if len(kinds) > 1 and not kinds <= set(_NUMERIC):
                raise ExprError("list items must all have one type", n.col)
            base = "real" if kinds == {"int", "real"} else (kinds.pop() if kinds else "int")
            return f"list[{base}]"
        if isinstance(n, Unary):
            if n.op == "not":
                need(n.operand, ("bool",), "the operand of `not`")
                return "bool"
            return need(n.operand, _NUMERIC, "the operand of `-`")
        if isinstance(n, Call):
            return call(n)
        assert isinstance(n, Binary)
        if n.op in ("and", "or"):
            need(n.left, ("bool",), f"the left side of `{n.op}`")
            need(n.right, ("bool",), f"the right side of `{n.op}`")
            return "bool"
        if n.op == "in":
            left = go(n.left)
            right = go(n.right)
            if not right.startswith("list["):
                raise ExprError("the right side of `in` must be a list", n.right.col)
            inner = right[5:-1]
            if left != inner and not (left in _NUMERIC and inner in _NUMERIC):
                raise ExprError(f"cannot look for a {left} in a list of {inner}", n.col)
            return "bool"
        left, right = go(n.left), go(n.right)
        if n.op in ("==", "!="):
            if left != right and not (left in _NUMERIC and right in _NUMERIC):
                raise ExprError(f"cannot compare {left} with {right}", n.col)
            return "bool"
        if left not in _NUMERIC or right not in _NUMERIC:
            raise ExprError(f"`{n.op}` needs numbers, not {left} and {right}", n.col)
        if n.op in ("<", "<=", ">", ">="):
            return "bool"
        if n.op in ("//", "%"):
            if left != "int" or right != "int":
                raise ExprError(f"`{n.op}` needs integers (use `/` for real division)", n.col)
            return "int"
        if n.op == "/":
            return "real"
        return "int" if left == right == "int" else "real"

    def call(n: Call) -> str:
        if n.func not in FUNCTIONS:
            raise ExprError(f"unknown function `{n.func}` (known: {', '.join(sorted(FUNCTIONS))})", n.col)
        kinds, result = FUNCTIONS[n.func]
        if len(n.args) != len(kinds):
            raise ExprError(f"`{n.func}` takes {len(kinds)} argument(s), not {len(n.args)}", n.col)
        got: list[str] = []
        for arg, kind in zip(n.args, kinds):
            if kind == "key":
                if not isinstance(arg, Name) or name_type(arg.name) is None:
                    raise ExprError(f"`{n.func}` takes a config key or launch fact name", arg.col)
                types[id(arg)] = "key"
                got.append("key")
            elif kind == "num":
                got.append(need(arg, _NUMERIC, f"an argument of `{n.func}`"))
            elif kind == "any":
                got.append(go(arg))
            else:
                got.append(need(arg, (kind,), f"an argument of `{n.func}`"))
        if n.func == "if":
            a, b = got[1], got[2]
            if a != b and not (a in _NUMERIC and b in _NUMERIC):
                raise ExprError("both branches of `if` must have one type", n.col)
            return "real" if a != b else a
        if result == "num":
            return "int" if all(g == "int" for g in got) else "real"
        return result

    go(node)
    return types


def names_in(node: Node) -> list[str]:
    """Every name the expression mentions, in order of appearance, without repeats."""
    out: list[str] = []

    def walk(n: Node) -> None:
        if isinstance(n, Name) and n.name not in out:
            out.append(n.name)
        for child in _children(n):
            walk(child)

    walk(node)
    return out


def value_names(node: Node) -> list[str]:
    """The names whose *values* the expression uses (not those only asked about with `present`/`auto`)."""
    out: list[str] = []

    def walk(n: Node) -> None:
        if isinstance(n, Call) and n.func in ("present", "auto"):
            return
        if isinstance(n, Name) and n.name not in out:
            out.append(n.name)
        for child in _children(n):
            walk(child)

    walk(node)
    return out


def _children(n: Node) -> tuple[Node, ...]:
    if isinstance(n, Call):
        return n.args
    if isinstance(n, Unary):
        return (n.operand,)
    if isinstance(n, Binary):
        return (n.left, n.right)
    if isinstance(n, ListLit):
        return n.items
    return ()


_PRECEDENCE = {"or": 1, "and": 2, "in": 4, "==": 4, "!=": 4, "<": 4, "<=": 4, ">": 4, ">=": 4, "+": 5, "-": 5,
               "*": 6, "/": 6, "//": 6, "%": 6}


def unparse(node: Node, show: Callable[[str], str] | None = None, parent: int = 0) -> str:
    """Expression text again; `show(name)` replaces a name (e.g. by its value)."""
    if isinstance(node, Num):
        return repr(node.value)
    if isinstance(node, Str):
        return repr(node.value)
    if isinstance(node, BoolLit):
        return "true" if node.value else "false"
    if isinstance(node, Name):
        return show(node.name) if show else node.name
    if isinstance(node, ListLit):
        return "[" + ", ".join(unparse(i, show) for i in node.items) + "]"
    if isinstance(node, Call):
        return f"{node.func}(" + ", ".join(unparse(a, show) for a in node.args) + ")"
    if isinstance(node, Unary):
        inner = unparse(node.operand, show, 7)
        return f"not {inner}" if node.op == "not" else f"-{inner}"
    assert isinstance(node, Binary)
    p = _PRECEDENCE[node.op]
    text = f"{unparse(node.left, show, p)} {node.op} {unparse(node.right, show, p + 1)}"
    return f"({text})" if p < parent else text
