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
from ..program.index import ModelIndex, memoised
from ..program.tree import call_name, const_str, cst, parameter_for
from .callables import called_parameters
from .flow import Flat, flatten

__all__ = ["BoundCall", "bound_calls", "bound_names", "runs_handed", "BOUND_TEXT", "string_constants", "call_helper"]


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
# each with the receiver's root name (`self`, `model`) and the method's name (pairs of groups). Searched in the text
# after a newline (`bound_names`): each alternative opens on a character (the first on the newline before its line,
# which no other match holds, rather than `^`; the last on `(`, `[` or `,` alike), so `re` tries the pattern only
# where one of those stands, not at every position (the same matches, a third less time).
_ARGUMENT_METHOD = r"[ \t]*([a-z_]\w*)(?:\.\w+)*\.(\w+)[ \t]*(?=[,)\]])"
BOUND_TEXT = re.compile(
    r"\n[ \t]*\w+[ \t]*=[ \t]*(\w+)(?:\.\w+)*\.(\w+)[ \t]*(?:#.*)?$"
    r"|getattr\([ \t]*(\w+)[^,()]*,[ \t]*[\"'](\w+)[\"'][ \t]*\)[ \t]*\("
    rf"|\({_ARGUMENT_METHOD}|\[{_ARGUMENT_METHOD}|,{_ARGUMENT_METHOD}",
    re.MULTILINE,
)


def bound_names(
    text: str, roots: frozenset[str] | set[str] | None = None, index: ModelIndex | None = None
) -> set[str]:
    """The method names the text may use as bound values (`BOUND_TEXT`), a pre-filter before any parse; with
    `roots`, only those on a receiver rooted at one of them (`self`, the function's parameters); with the file's
    `index`, also names a string constant of the file gives (`getattr(model, METHOD)(`) and names handed to a call
    helper of the program (`call_method(model, "encode", x)`)."""
    found = set()
    for groups in BOUND_TEXT.findall("\n" + text):
        for root, name in zip(groups[::2], groups[1::2]):
            if name and (roots is None or root in roots):
                found.add(name)
    if index is not None and ("getattr(" in text or "\"" in text or "'" in text):
        constants = string_constants(index)
        for root, constant in _GETATTR_CONSTANT.findall(text):
            if constant in constants and (roots is None or root in roots):
                found.add(constants[constant])
        for function, root, name in (*_HANDED_NAME.findall(text), *_handed_by_keyword(text)):
            if (roots is None or root in roots) and call_helper(index, function) is not None:
                found.add(constants.get(name, name))
    return found


# `getattr(model, METHOD)(`: a method looked up by a constant's name (the receiver's root, the constant).
_GETATTR_CONSTANT = re.compile(r"getattr\([ \t]*(\w+)[^,()]*,[ \t]*([A-Za-z_]\w*)[ \t]*\)[ \t]*\(")
# `call_method(model, "encode", ...)`, `run(self.net, METHOD, x)`: a receiver and a name handed to a function.
_HANDED_NAME = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\([ \t]*(\w+)[\w.]*[ \t]*,[ \t]*[\"']?(\w+)[\"']?[ \t]*[,)]")
def _handed_by_keyword(text: str) -> list[tuple[str, str, str]]:
    """`_HANDED_KEYWORD`'s matches, looked for only on the lines holding a keyword string argument (literal-led)."""
    found: list[tuple[str, str, str]] = []
    for m in _KEYWORD_STRING.finditer(text):
        start = text.rfind("\n", 0, m.start()) + 1
        found += _HANDED_KEYWORD.findall(text, start, m.end())
    return found


_KEYWORD_STRING = re.compile(r"=[ \t]*[\"'][A-Za-z_]\w*[\"'][ \t]*[,)]")
# `safe_call(self.actor, state, method="compare_kl")`: the name handed by keyword, after other arguments.
_HANDED_KEYWORD = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\([ \t]*(\w+)[\w.]*[ \t]*,[^()\n]*?\b\w+[ \t]*=[ \t]*[\"'](\w+)[\"'][ \t]*[,)]")


@memoised
def string_constants(index: ModelIndex) -> dict[str, str]:
    """Module-level names of the file bound to a string that names an identifier (`METHOD = "encode"`)."""
    found: dict[str, str] = {}
    for start, end in index.skeleton.script:
        for name, value in _CONSTANT.findall(index.skeleton.text(start, end)):
            found[name] = value
    return found


_CONSTANT = re.compile(r"^([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=[ \t]*[\"']([A-Za-z_]\w*)[\"'][ \t]*(?:#.*)?$", re.MULTILINE)


@memoised
def call_helper(index: ModelIndex, written: str) -> tuple[str, str] | None:
    """(receiver parameter, name parameter) of a function of the program that calls a method of its argument
    looked up by a name it is handed (`def call_method(obj, name, *a): return getattr(obj, name)(*a)`)."""
    if not written or written.startswith(("self.", ".")):
        return None
    node = _function(index, written, "getattr(")
    if node is None:
        return None
    params = {p.name.value for p in (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params)}
    flat = flatten(node)
    for call, _ctx in flat.nodes:
        if type(call) is not cst.Call or not isinstance(call.func, cst.Call):
            continue
        inner = call.func
        if not (isinstance(inner.func, cst.Name) and inner.func.value == "getattr"):
            continue
        args = [a.value for a in inner.args if not a.star and a.keyword is None]
        if len(args) == 2 and all(isinstance(a, cst.Name) and a.value in params for a in args):
            return args[0].value, args[1].value  # type: ignore[attr-defined]
    return None


def _function(index: ModelIndex, written: str, text: str = "") -> cst.FunctionDef | None:
    """The function of this file or another a call names, parsed only if its text holds `text`."""
    if "." not in written and written in index.skeleton.functions:
        found = index.function_info(written)
    else:
        external = index.external_function(index.qualify(written))
        found = external[1] if external is not None else None
    node = found.node if found is not None and text in found.text else None
    return node if isinstance(node, cst.FunctionDef) else None


def bound_calls(flat: Flat, index: ModelIndex | None = None) -> list[BoundCall]:
    """The calls in `flat` that run a bound method kept as a value, or hand one to another call; with the file's
    `index`, also a method looked up by a string constant of the file (`getattr(model, METHOD)(x)`) and one a call
    helper of the program runs by the name it is handed (`call_method(model, "encode", x)`)."""
    constants = string_constants(index) if index is not None else {}
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
            found += [BoundCall(node, r, m, False) for r, m in _bound(func, constants)]  # `getattr(r, "m")(x)`
        elif index is not None and node.args:
            found += _helper_run(index, node, constants)
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
    node = _function(index, written)
    if node is None:
        return False
    param = parameter_for(node, bound.node, bound.position)
    return param is not None and param in called_parameters(node)


def _helper_run(index: ModelIndex, call: cst.Call, constants: dict[str, str]) -> list[BoundCall]:
    """`call_method(model, "encode", x)`: the method a call helper runs on the receiver it is handed."""
    written = call_name(call)
    helper = call_helper(index, written) if written and not written.startswith("self.") else None
    if helper is None:
        return []
    node = _function(index, written)
    receiver = name = None
    for position, arg in enumerate(call.args):
        param = parameter_for(node, call, position) if node is not None and not arg.star else None
        if param == helper[0]:
            receiver = arg.value
        elif param == helper[1]:
            name = const_str(arg.value)
            if name is None and isinstance(arg.value, cst.Name):
                name = constants.get(arg.value.value)
    if receiver is None or name is None or isinstance(receiver, cst.Name) and receiver.value == "self":
        return []
    return [BoundCall(call, receiver, name, False)]


def _bound(value: cst.BaseExpression, constants: dict[str, str] | None = None) -> tuple[tuple[cst.BaseExpression, str], ...]:
    """`r.m` (an attribute of something other than `self` alone) or `getattr(r, "m")` (or `getattr(r, M)` for a
    string constant `M` of the file): ((r, "m"),)."""
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
        if name is None and len(args) == 2 and isinstance(args[1].value, cst.Name) and constants:
            name = constants.get(args[1].value.value)
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
