"""Bound methods as values: a call of a value that is a method of a receiver is a call of that method.

`f = self.act.get_action; a = f(s)`, `getattr(model, "encode")(x)`, `fns = (self.a.m, self.b.m); fns[i](x)`,
`solver(self.unet.sample, x)`: each runs `<receiver>.<name>(...)` with no hook of the receiver, as the plain
call would; a handed one only where the callee is known to call it (`runs_handed`). `bound_calls(flat)` lists them in a function's flattened body, each with the call that runs (or is
handed) the method, its receiver and the method's name; what the receiver is and what the method does are the
asking rule's questions (`instances`, `own`). A value kept in a local is followed from the assignment that
binds it last before the call; a container literal of bound methods answers for every element.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..program import known
from ..program.index import ModelIndex
from ..program.tree import call_name, const_str, cst, parameter_for
from .callables import called_parameters
from .flow import Flat

__all__ = ["BoundCall", "bound_calls", "bound_names", "runs_handed", "BOUND_TEXT"]


@dataclass(frozen=True, slots=True)
class BoundCall:
    """`node` runs `<receiver>.<name>(...)`: called through a value (`f(x)`, `getattr(r, "m")(x)`, `fns[0](x)`), or
    handed to another call that may call it (`handed`: `solve(r.m, x)`)."""

    node: cst.Call
    receiver: cst.BaseExpression
    name: str
    handed: bool
    position: int = -1  # the argument's position, when handed (a keyword argument: -1)


# Text trigger: a local bound to a method of something (`f = self.act.get_action`), a method looked up by name and
# called (`getattr(model, "encode")(`), a method in a container literal or handed as an argument (`(self.a.m, `);
# each with the receiver's root name (`self`, `model`) and the method's name.
BOUND_TEXT = re.compile(
    r"^[ \t]*\w+[ \t]*=[ \t]*(\w+)(?:\.\w+)*\.(\w+)[ \t]*(?:#.*)?$"
    r"|getattr\([ \t]*(\w+)[^,()]*,[ \t]*[\"'](\w+)[\"'][ \t]*\)[ \t]*\("
    r"|[(\[,][ \t]*([a-z_]\w*)(?:\.\w+)*\.(\w+)[ \t]*(?=[,)\]])",
    re.MULTILINE,
)


def bound_names(text: str, roots: frozenset[str] | set[str] | None = None) -> set[str]:
    """The method names the text may use as bound values (`BOUND_TEXT`), a pre-filter before any parse; with
    `roots`, only those on a receiver rooted at one of them (`self`, the function's parameters)."""
    found = set()
    for groups in BOUND_TEXT.findall(text):
        for root, name in zip(groups[::2], groups[1::2]):
            if name and (roots is None or root in roots):
                found.add(name)
    return found


def bound_calls(flat: Flat) -> list[BoundCall]:
    """The calls in `flat` that run a bound method kept as a value, or hand one to another call."""
    values: dict[str, tuple[tuple[cst.BaseExpression, str], ...]] = {}  # local -> the bound methods it may hold
    found: list[BoundCall] = []
    for node, _ctx in flat.nodes:
        if type(node) is cst.Assign and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            name = node.targets[0].target.value
            held = _bound(node.value) or _container(node.value)
            if held:
                values[name] = held
            else:
                values.pop(name, None)
            continue
        if type(node) is not cst.Call:
            continue
        func = node.func
        if isinstance(func, cst.Name) and func.value in values:
            found += [BoundCall(node, r, m, False) for r, m in values[func.value]]
        elif isinstance(func, cst.Subscript) and isinstance(func.value, cst.Name) and func.value.value in values:
            found += [BoundCall(node, r, m, False) for r, m in values[func.value.value]]  # `fns[i](x)`
        elif isinstance(func, cst.Call):
            found += [BoundCall(node, r, m, False) for r, m in _bound(func)]  # `getattr(r, "m")(x)`
        for position, arg in enumerate(node.args):
            if arg.star:
                continue
            handed = _bound(arg.value) if isinstance(arg.value, cst.Attribute) else ()
            if not handed and isinstance(arg.value, cst.Name):
                handed = values.get(arg.value.value, ())
            at = position if arg.keyword is None else -1
            found += [BoundCall(node, r, m, True, at) for r, m in handed]
    return found


def runs_handed(index: ModelIndex, bound: BoundCall) -> bool:
    """Does the call a bound method is handed to run it: a function of this file or another that calls that
    parameter on values of its own (`def solve(fn, x): return fn(x)`), or one of torch's transforms that call
    their first argument (`checkpoint(self.v.m, x)`)? A presence test (`exists(f)`), a module called on it, or a
    function we cannot read does not."""
    written = call_name(bound.node)
    if not written or bound.position < 0 or written.startswith("self."):
        return False
    qualified = index.qualify(written)
    if qualified in known.CALLS_FIRST_ARGUMENT:
        return bound.position == 0
    found = None
    if "." not in written and written in index.skeleton.functions:
        found = index.function_info(written)
    else:
        external = index.external_function(qualified)
        found = external[1] if external is not None else None
    node = found.node if found is not None else None
    if not isinstance(node, cst.FunctionDef):
        return False
    param = parameter_for(node, bound.node, bound.position)
    return param is not None and param in called_parameters(node)


def _bound(value: cst.BaseExpression) -> tuple[tuple[cst.BaseExpression, str], ...]:
    """`r.m` (an attribute of something other than `self` alone) or `getattr(r, "m")`: ((r, "m"),)."""
    if isinstance(value, cst.Attribute):
        receiver = value.value
        if isinstance(receiver, cst.Name) and receiver.value == "self":
            return ()  # the object's own method: no other module's hooks are skipped
        if isinstance(receiver, (cst.Name, cst.Attribute, cst.Subscript)):
            return ((receiver, value.attr.value),)
        return ()
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "getattr":
        args = [a for a in value.args if not a.star and a.keyword is None]
        name = const_str(args[1].value) if len(args) == 2 else None
        receiver = args[0].value if args else None
        if name is not None and not (isinstance(receiver, cst.Name) and receiver.value == "self"):
            return ((receiver, name),)  # type: ignore[arg-type]
    return ()


def _container(value: cst.BaseExpression) -> tuple[tuple[cst.BaseExpression, str], ...]:
    """The bound methods a tuple, list or dict literal holds (`(self.a.m, self.b.m)`, `{"m": self.a.m}`)."""
    if isinstance(value, (cst.Tuple, cst.List)):
        elements = [e.value for e in value.elements if not isinstance(e, cst.StarredElement)]
    elif isinstance(value, cst.Dict):
        elements = [e.value for e in value.elements if isinstance(e, cst.DictElement)]
    else:
        return ()
    found: tuple[tuple[cst.BaseExpression, str], ...] = ()
    for element in elements:
        found += _bound(element)
    return found
