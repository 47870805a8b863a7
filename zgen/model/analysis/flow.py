"""What runs under which condition inside one function.

`flatten` lists every node of a function with its context: the tests of the
`if`/`while`/conditional expressions around it, the loops around it, and
whether a ZeRO-3 guard (`GatheredParameters`, `synced_gpus`,
`is_deepspeed_zero3_enabled()`) covers it, with each node's parent.
`taint.py` says which values differ between ranks and `calls.py` which
calls run a submodule; the rules are written on top of these three.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache, partial
from typing import Any

from ..program import known
from ..program.index import ClassInfo, MethodInfo, ModelIndex, memoised
from ..program.tree import call_name, children, cst, walk

__all__ = [
    "Ctx", "Flat", "flatten", "flat_of", "mentions_guard", "bound_names", "targets_of", "FILLS", "COMPREHENSIONS",
    "SAME_ITEMS", "same_items", "own_only", "own_returns", "loop_items", "mapping_walked", "runs_gathered", "stored_into",
    "self_call_arguments", "own_node", "paired", "passes_items",
]


@dataclass(frozen=True, slots=True)
class Ctx:
    """Where a node sits: enclosing tests (innermost last), enclosing loops, guarded or not."""

    conds: tuple[cst.BaseExpression, ...] = ()
    loops: tuple[cst.CSTNode, ...] = ()
    guarded: bool = False
    # For each test in `conds`, how many loops enclosed it (tells a test inside a loop from one outside).
    depths: tuple[int, ...] = ()

    def cond(self, test: cst.BaseExpression) -> Ctx:
        guarded = self.guarded or mentions_guard(test)
        return Ctx(self.conds + (test,), self.loops, guarded, self.depths + (len(self.loops),))

    def loop(self, node: cst.CSTNode) -> Ctx:
        return Ctx(self.conds, self.loops + (node,), self.guarded, self.depths)

    def guard(self) -> Ctx:
        return Ctx(self.conds, self.loops, True, self.depths)


@dataclass(eq=False, slots=True)
class Flat:
    """A function's nodes in source order with their context, and each node's parent."""

    nodes: list[tuple[cst.CSTNode, Ctx]] = field(default_factory=list)
    parent: dict[int, cst.CSTNode] = field(default_factory=dict)
    position: dict[int, int] = field(default_factory=dict)
    # What is worked out once per function from its finished nodes (`counts.local_bindings`).
    memo: dict[str, Any] = field(default_factory=dict)

    def function_of(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The innermost function or lambda `node` sits in, below the flattened one (None: the flattened one's own
        code). A `return` there leaves that function, not the one flattened."""
        current = self.parent.get(id(node))
        while current is not None:
            if type(current) is cst.FunctionDef or type(current) is cst.Lambda:
                return current if id(current) in self.parent else None
            current = self.parent.get(id(current))
        return None

    def within(self, node: cst.CSTNode, ancestor: cst.CSTNode) -> bool:
        """Does `node` sit inside `ancestor` (by the parent links)?"""
        current = self.parent.get(id(node))
        while current is not None:
            if current is ancestor:
                return True
            current = self.parent.get(id(current))
        return False


def mentions_guard(test: cst.CSTNode) -> bool:
    """Does a condition mention `synced_gpus`, `is_deepspeed_zero3_enabled()` or a similar guard?"""
    for node in walk(test):
        if type(node) is cst.Name and node.value in known.GUARD_NAMES:  # leaf node types: no ABC check
            return True
        if type(node) is cst.Attribute and node.attr.value in known.GUARD_ATTRIBUTES:
            return True
    return False


@cache
def COMPREHENSIONS() -> tuple[type, ...]:  # noqa: N802  (a constant, made when libcst is first needed)
    """The comprehension node types: their `for` clauses are loops, their element runs inside them."""
    return (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)


def flatten(func: cst.CSTNode) -> Flat:
    """Every node under `func` in source order, with its `Ctx` (iterative: no recursion limit)."""
    flat = Flat()
    nodes, parents, positions = flat.nodes, flat.parent, flat.position
    stack: list[tuple[cst.CSTNode, Ctx, cst.CSTNode | None]] = [(func, Ctx(), None)]
    # Children of each comprehension's `for` clauses, with the contexts the comprehension computed.
    pending: dict[int, list[tuple[cst.CSTNode, Ctx]]] = {}
    gathering: set[str] = set()  # `cm = deepspeed.zero.GatheredParameters(p) if zero3 else nullcontext()`
    comprehensions, specials = COMPREHENSIONS(), _special()
    while stack:
        node, ctx, parent = stack.pop()
        positions[id(node)] = len(nodes)
        nodes.append((node, ctx))
        if parent is not None:
            parents[id(node)] = parent
        kind = type(node)
        if kind is cst.CompFor:
            pushes = pending.pop(id(node), [])
            for child, child_ctx in reversed(pushes):
                stack.append((child, child_ctx, node))
            continue
        if kind in comprehensions:
            pushes = _comprehension(node, ctx, pending)
            for child, child_ctx in reversed(pushes):
                stack.append((child, child_ctx, node))
            continue
        if kind is cst.Assign and _gathers(node.value, bool(ctx.conds)):
            gathering.update(t.target.value for t in node.targets if isinstance(t.target, cst.Name))
        special = specials.get(kind)
        if kind is cst.With and gathering:
            special = partial(_with, gathering=gathering)
        if special is None:
            for child in reversed(children(node)):
                stack.append((child, ctx, node))
            continue
        pushes = special(node, ctx)
        for child, child_ctx in reversed(pushes):
            stack.append((child, child_ctx, node))
    return flat


def _if(node: cst.If, ctx: Ctx) -> list[tuple[cst.CSTNode, Ctx]]:
    inner = ctx.cond(node.test)
    pushes = [(node.test, ctx), (node.body, inner)]
    if node.orelse is not None:
        pushes.append((node.orelse, inner))
    return pushes


def _while(node: cst.While, ctx: Ctx) -> list[tuple[cst.CSTNode, Ctx]]:
    inner = ctx.cond(node.test).loop(node)
    pushes = [(node.test, ctx), (node.body, inner)]
    if node.orelse is not None:
        pushes.append((node.orelse, ctx))
    return pushes


def _for(node: cst.For, ctx: Ctx) -> list[tuple[cst.CSTNode, Ctx]]:
    inner = ctx.loop(node)
    pushes = [(node.target, inner), (node.iter, ctx), (node.body, inner)]
    if node.orelse is not None:
        pushes.append((node.orelse, ctx))
    return pushes


def _with(node: cst.With, ctx: Ctx, gathering: set[str] | frozenset[str] = frozenset()) -> list[tuple[cst.CSTNode, Ctx]]:
    gathered = any(
        known.is_gather_context(call_name(item.item))
        or (isinstance(item.item, cst.Name) and item.item.value in gathering)
        for item in node.items
    )
    inner = ctx.guard() if gathered else ctx
    return [(item, ctx) for item in node.items] + [(node.body, inner)]


def _block(node: cst.IndentedBlock, ctx: Ctx) -> list[tuple[cst.CSTNode, Ctx]]:
    """Statements after `if isinstance(trainer.strategy, DeepSpeedStrategy): raise ...` run only where ZeRO is not
    used: guarded like the `else` of a guard test."""
    pushes: list[tuple[cst.CSTNode, Ctx]] = []
    current = ctx
    for child in children(node):
        pushes.append((child, current))
        if not current.guarded and type(child) is cst.If and _refuses_zero(child):
            current = ctx.guard()
    return pushes


def _refuses_zero(node: cst.If) -> bool:
    """`if <a test naming DeepSpeed or ZeRO-3>: raise ...` with no `else` nor negation: the function refuses to run
    under it."""
    if node.orelse is not None or not isinstance(node.body, cst.IndentedBlock) or not node.body.body:
        return False
    last = node.body.body[-1]
    if not (isinstance(last, cst.SimpleStatementLine) and any(type(small) is cst.Raise for small in last.body)):
        return False
    if any(isinstance(n, (cst.Not, cst.NotEqual, cst.IsNot, cst.NotIn)) for n in walk(node.test)):
        return False  # `if not zero3: raise`: what follows runs only under it
    return mentions_guard(node.test) or any(
        (type(n) is cst.Name and _ZERO_NAME.search(n.value)) or (type(n) is cst.Attribute and _ZERO_NAME.search(n.attr.value))
        for n in walk(node.test)
    )


# A name of DeepSpeed's engine or ZeRO stage 3 in a test (`DeepSpeedStrategy`, `is_deepspeed_zero3_enabled`).
_ZERO_NAME = re.compile(r"(?i)deepspeed|zero_?3")


def _gathers(value: cst.BaseExpression, chosen: bool = False) -> bool:
    """A gather context, possibly chosen by a test (`GatheredParameters(p) if zero3 else nullcontext()`). A choice
    of FSDP's `summon_full_params` (`ctx = m.summon_full_params()` under `if hasattr(m, "summon_full_params")`, with
    `contextlib.suppress()` otherwise) gathers nothing under DeepSpeed, where the other choice is taken."""
    if isinstance(value, cst.IfExp):
        return _gathers(value.body, True) or _gathers(value.orelse, True)
    name = (call_name(value) or "") if isinstance(value, cst.Call) else ""
    return known.is_gather_context(name) and not (chosen and name.rsplit(".", 1)[-1] in _FSDP_ONLY)


_FSDP_ONLY = frozenset({"summon_full_params"})


def _ifexp(node: cst.IfExp, ctx: Ctx) -> list[tuple[cst.CSTNode, Ctx]]:
    inner = ctx.cond(node.test)
    return [(node.body, inner), (node.test, ctx), (node.orelse, inner)]


def _boolop(node: cst.BooleanOperation, ctx: Ctx) -> list[tuple[cst.CSTNode, Ctx]]:
    # `a and self.block(x)`: the right side runs only depending on the left.
    return [(node.left, ctx), (node.right, ctx.cond(node.left))]


def _comprehension(node, ctx: Ctx, pending: dict) -> list[tuple[cst.CSTNode, Ctx]]:
    """Push each `for` clause (its iterable evaluated outside, later ones inside) and the element."""
    inner = ctx.loop(node)
    comp = node.for_in
    pushes: list[tuple[cst.CSTNode, Ctx]] = []
    first = True
    while comp is not None:
        clause = [(comp.target, inner), (comp.iter, ctx if first else inner)]
        for test in comp.ifs:
            clause.append((test.test, inner))
            inner = inner.cond(test.test)
        pending[id(comp)] = clause
        pushes.append((comp, inner))
        first = False
        comp = comp.inner_for_in
    if type(node) is cst.DictComp:
        pushes += [(node.key, inner), (node.value, inner)]
    else:
        pushes.append((node.elt, inner))
    return pushes


@cache
def _special() -> dict[type, Any]:
    """The statements and expressions whose children run in another context than their own."""
    return {
        cst.If: _if,
        cst.While: _while,
        cst.For: _for,
        cst.With: _with,
        cst.IndentedBlock: _block,
        cst.IfExp: _ifexp,
        cst.BooleanOperation: _boolop,
    }


def flat_of(method: MethodInfo) -> Flat | None:
    """The flattened method, computed once per method."""
    return _flat(method.index, method)


@memoised
def _flat(index: ModelIndex, method: MethodInfo) -> Flat | None:
    node = method.node
    return flatten(node) if node is not None else None


def runs_gathered(cls: ClassInfo, method: MethodInfo) -> bool:
    """Is `method` a private helper that its class calls only where parameters are gathered?

    `with GatheredParameters(params): self._copy(new, old)` and the `else` of an
    `is_deepspeed_zero3_enabled()` test: a name with a leading underscore is not called
    by a training loop, so those call sites are the only ones.
    """
    name = method.name
    if not name.startswith("_") or name.startswith("__"):
        return False
    pattern = re.compile(r"self(?<!\wself)\." + re.escape(name) + r"\s*\(")  # (word first: `program/trigger.py`)
    guarded = []
    for caller in cls.all_methods():
        if caller is method or not pattern.search(caller.text):
            continue
        flat = flat_of(caller)
        if flat is None:
            return False
        for node, ctx in flat.nodes:
            if type(node) is cst.Call and isinstance(node.func, cst.Attribute) and node.func.attr.value == name:
                target = node.func.value
                if isinstance(target, cst.Name) and target.value == "self":
                    guarded.append(ctx.guarded)
    return bool(guarded) and all(guarded)


def bound_names(target: cst.CSTNode) -> Iterator[str]:
    """Names bound by an assignment or loop target (`a`, `a, (b, c)`, `*rest`)."""
    if isinstance(target, cst.Name):
        yield target.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from bound_names(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from bound_names(target.value)


def stored_into(target: cst.CSTNode) -> str | None:
    """`xs[i] = v`, `stats["loss"] = v`: the local container whose item the assignment writes (it holds v from then
    on, like `xs.append(v)`), or None."""
    if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name):
        return target.value.value
    return None


# Methods that put their arguments into the container they are called on.
FILLS = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "put", "appendleft"})


# Builtins whose items are their argument's items (some of them, in some order): `list(x)`, `reversed(x)`.
SAME_ITEMS = frozenset({"list", "tuple", "iter", "sorted", "reversed", "filter"})


def same_items(iterable: cst.BaseExpression) -> cst.BaseExpression:
    """What `iterable` takes its items from, through `list(...)`, `sorted(...)`, `filter(f, ...)` and the like; for
    `chain(a, b)` (`itertools.chain`) and `list(a) + list(b)`, the first of the iterables it joins (items of the same
    kind as a rule)."""
    while isinstance(iterable, cst.BinaryOperation) and isinstance(iterable.operator, cst.Add):
        iterable = iterable.left
    while isinstance(iterable, cst.Call) and _chained(iterable) and iterable.args and iterable.args[0].keyword is None:
        if iterable.args[0].star:
            break
        iterable = iterable.args[0].value
    while isinstance(iterable, cst.Call) and (
        isinstance(iterable.func, cst.Name) and iterable.func.value in SAME_ITEMS or passes_items(iterable)
    ):
        args = [a for a in iterable.args if a.keyword is None and not a.star]
        at = 1 if isinstance(iterable.func, cst.Name) and iterable.func.value == "filter" else 0
        if len(args) <= at:
            break
        iterable = args[at].value
    return iterable


def paired(target: cst.BaseExpression, value: cst.BaseExpression) -> list[tuple[cst.BaseExpression, cst.BaseExpression]]:
    """What each part of an assignment's target takes: `x = v` -> [(x, v)]; `a, b = u, v` item by item -> [(a, u),
    (b, v)]; empty for an unpacking the values do not spell out (`a, b = f(x)`, a starred item, lengths apart)."""
    if not isinstance(target, (cst.Tuple, cst.List)):
        return [(target, value)]
    if not isinstance(value, (cst.Tuple, cst.List)) or len(target.elements) != len(value.elements):
        return []
    if any(isinstance(e, cst.StarredElement) for e in (*target.elements, *value.elements)):
        return []
    return [(name.value, each.value) for name, each in zip(target.elements, value.elements)]


def passes_items(call: cst.Call) -> bool:
    """`tqdm(xs, desc=...)`, `tqdm.tqdm(xs)`, `track(xs)`, `iter(xs)`: a call handing out the items of the iterable
    it is given, unchanged (`known.PASS_THROUGH`)."""
    func = call.func
    last = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else ""
    return last in known.PASS_THROUGH


def own_only(walk: cst.Call) -> bool:
    """Does `m.parameters(...)` / `m.named_parameters(...)` walk only `m`'s own parameters, not its children's?
    `recurse=False` does, or a `recurse=` the code decides; `recurse=True` is the default walk of every child."""
    return any(
        arg.keyword is not None and arg.keyword.value == "recurse"
        and not (isinstance(arg.value, cst.Name) and arg.value.value == "True")
        for arg in walk.args
    )


def own_returns(function: MethodInfo) -> tuple[Flat | None, list[cst.BaseExpression]]:
    """The function's flattened body and the values its own `return`s hand back (not those of a function or lambda
    defined in it)."""
    flat = flat_of(function)
    if flat is None:
        return None, []
    root = flat.nodes[0][0] if flat.nodes else None
    returns = [
        node.value for node, _ctx in flat.nodes
        if type(node) is cst.Return and node.value is not None and own_node(flat, node, root)
    ]
    return flat, returns


def own_node(flat: Flat, node: cst.CSTNode, root: cst.CSTNode | None) -> bool:
    """Is `node` (a `return`, a `raise`) the function's own, not one of a function or lambda defined inside it?"""
    parent = flat.parent.get(id(node))
    while parent is not None and parent is not root:
        if isinstance(parent, (cst.FunctionDef, cst.Lambda)):
            return False
        parent = flat.parent.get(id(parent))
    return True


def _chained(call: cst.Call) -> bool:
    """`chain(...)` / `itertools.chain(...)`."""
    func = call.func
    if isinstance(func, cst.Name):
        return func.value == "chain"
    return isinstance(func, cst.Attribute) and func.attr.value == "chain" and isinstance(func.value, cst.Name) and (
        func.value.value == "itertools"
    )


def self_call_arguments(flat: Flat, name: str) -> Iterator[tuple[int | str, cst.BaseExpression]]:
    """Each argument of each `self.<name>(...)` call in `flat`, keyed by its position after `self` or its keyword (up
    to the first starred argument, after which positions are unknown)."""
    for node, _ctx in flat.nodes:
        if type(node) is not cst.Call or not isinstance(node.func, cst.Attribute) or node.func.attr.value != name:
            continue
        if not (isinstance(node.func.value, cst.Name) and node.func.value.value == "self"):
            continue
        at = 0
        for arg in node.args:
            if arg.star:
                break
            if arg.keyword is not None:
                yield arg.keyword.value, arg.value
            else:
                yield at, arg.value
                at += 1


def loop_items(
    target: cst.BaseExpression, iterable: cst.BaseExpression
) -> list[tuple[cst.BaseExpression, cst.BaseExpression]]:
    """Each part of a loop target with the iterable whose items it takes.

    `for x in list(xs)`: (x, xs); `for i, x in enumerate(xs)`: (x, xs); `for a, b in zip(xs, ys)` (or another
    zip, `known.ZIP_LIKE`): (a, xs) and (b, ys); a pair otherwise takes the second of each item (`for name, p in
    m.named_parameters()`: (p, the call)). Anything else binds the whole target to the iterable.
    """
    iterable = same_items(iterable)
    if not isinstance(target, (cst.Tuple, cst.List)):
        return [(target, iterable)]
    parts = [e.value for e in target.elements]
    name = call_name(iterable) if isinstance(iterable, cst.Call) else None
    if name is not None and known.ZIP_LIKE.match(name.rsplit(".", 1)[-1]):
        args = [a.value for a in iterable.args if a.keyword is None and not a.star]  # type: ignore[union-attr]
        return [pair for part, arg in zip(parts, args) for pair in loop_items(part, arg)]
    if name == "enumerate" and len(parts) == 2 and iterable.args:  # type: ignore[union-attr]
        return loop_items(parts[1], iterable.args[0].value)  # type: ignore[union-attr]
    if len(parts) == 2:
        return [(parts[1], iterable)]
    return [(target, iterable)]


def mapping_walked(iterable: cst.BaseExpression) -> cst.BaseExpression:
    """The mapping whose values a loop over `iterable` takes: `d` for `d.values()` and `d.items()` (`loop_items`
    pairs `.items()`'s second with the loop's second name); anything else as it is."""
    if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute) and not iterable.args:
        if iterable.func.attr.value in ("values", "items"):
            return iterable.func.value
    return iterable


def targets_of(node: cst.CSTNode) -> tuple[list[cst.CSTNode], cst.CSTNode | None]:
    """(targets, value) of an assignment-like node, or ([], None)."""
    kind = type(node)
    if kind is cst.Assign:
        return [t.target for t in node.targets], node.value
    if kind is cst.AnnAssign or kind is cst.AugAssign:
        return ([node.target], node.value) if node.value is not None else ([], None)
    if kind is cst.For or kind is cst.CompFor:
        return [node.target], node.iter
    if kind is cst.NamedExpr:
        return [node.target], node.value
    return [], None
