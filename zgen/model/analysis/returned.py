"""What a function hands back: the parameters it returns as they came, and the attributes of `self` a call made
in a module's method hands back.

A module's own methods reach a child through more than `self.<name>`: a getter (`self.get_base_layer()` with
`return self.base_layer`), a `@property` returning the child (`self.wrapped`), or a function of the program
handed the child or the module itself that returns what it was given (`unwrap(self.base)`) or walks down wrappers
to the innermost (`while hasattr(m, "base_layer"): m = m.base_layer`; `return m`). `returned_attributes` names
the children such a call hands back, so a parameter read or written through it (`self.get_base_layer().weight.data
+= delta`) is the child's (`analysis.params`). `instances` types the same joins by class.
"""

from __future__ import annotations

from ..program.index import PROPERTY_DEF, ClassInfo, ModelIndex, memoised
from ..program.tree import call_name, cst, parameter_for
from .effects import resolve_function
from .flow import Flat

__all__ = [
    "small_statements", "returned_values", "function_parameters", "handed_back", "argument_value",
    "returned_attributes", "property_attributes", "getter_paths", "is_property",
]


def small_statements(body: cst.BaseSuite):
    """Every simple statement in a function body, nested blocks included (not nested functions or classes)."""
    stack = [body]
    while stack:
        block = stack.pop()
        for stmt in getattr(block, "body", ()):
            if isinstance(stmt, cst.SimpleStatementLine):
                yield from stmt.body
            elif isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                continue
            elif isinstance(stmt, cst.Match):  # no body of its own: each case has one
                stack.extend(case.body for case in stmt.cases)
            elif isinstance(stmt, cst.BaseCompoundStatement):
                stack.append(stmt.body)
                orelse = getattr(stmt, "orelse", None)
                while orelse is not None:
                    stack.append(orelse.body)
                    orelse = getattr(orelse, "orelse", None)
                for handler in getattr(stmt, "handlers", ()):
                    stack.append(handler.body)
                final = getattr(stmt, "finalbody", None)
                if final is not None:
                    stack.append(final.body)


def returned_values(node: cst.FunctionDef) -> list[cst.BaseExpression]:
    """The values of the function's `return` statements."""
    return [s.value for s in small_statements(node.body) if isinstance(s, cst.Return) and s.value is not None]


def function_parameters(node: cst.FunctionDef) -> set[str]:
    """The names of the function's parameters, less `self` and `cls`."""
    params = node.params
    return {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)} - {"self", "cls"}


def argument_value(node: cst.FunctionDef, call: cst.Call, param: str) -> cst.BaseExpression | None:
    """What `call` hands parameter `param` of the function `node`."""
    for position, arg in enumerate(call.args):
        if not arg.star and parameter_for(node, call, position) == param:
            return arg.value
    return None


@memoised
def handed_back(index: ModelIndex, node: cst.FunctionDef) -> tuple[str, ...]:
    """The parameters a function returns as they came (or unwrapped: `m.module if hasattr(m, "module") else m`,
    `getattr(m, "module", m)`, `a or b`): whatever the caller handed in comes back."""
    params = function_parameters(node)
    found: list[str] = []
    for value in returned_values(node):
        stack = [value]
        while stack:
            part = stack.pop()
            if isinstance(part, cst.IfExp):
                stack += [part.body, part.orelse]
            elif isinstance(part, cst.BooleanOperation):
                stack += [part.left, part.right]
            elif isinstance(part, cst.Call) and call_name(part) == "getattr" and len(part.args) == 3:
                stack.append(part.args[2].value)
            elif isinstance(part, cst.Name) and part.value in params:
                found.append(part.value)
    return tuple(dict.fromkeys(found))


def is_property(cls: ClassInfo, name: str) -> bool:
    """Is `name` a `@property` of `cls`, defined in it or in a base class of any file?"""
    method = cls.inherited_method(name)
    return method is not None and PROPERTY_DEF.match(method.text.lstrip()) is not None


def property_attributes(cls: ClassInfo, name: str) -> frozenset[str]:
    """The attributes of `self` a property (or a getter method) `name` of `cls` returns (`return self.base_layer`);
    empty when some return is anything else."""
    return _getter_attributes(cls.index, cls, name, 0)


def getter_paths(cls: ClassInfo, name: str, depth: int = 0) -> frozenset[tuple[str, ...]]:
    """The attribute paths below `self` a getter method (or property) `name` of `cls` returns when every return is
    one (`return self.embedding_layer.cat_embeddings`: `("embedding_layer", "cat_embeddings")`, a first step that is
    a property itself read through); empty when some return is anything else."""
    getter = cls.inherited_method(name)
    if getter is None or getter.node is None or depth > 3 or "return" not in getter.text:
        return frozenset()
    found: set[tuple[str, ...]] = set()
    for value in returned_values(getter.node):
        parts: list[str] = []
        while isinstance(value, cst.Attribute):
            parts.append(value.attr.value)
            value = value.value
        if not parts or not (isinstance(value, cst.Name) and value.value == "self"):
            return frozenset()
        path = tuple(reversed(parts))
        if is_property(cls, path[0]):
            inner = getter_paths(cls, path[0], depth + 1)
            if not inner:
                return frozenset()
            found |= {head + path[1:] for head in inner}
        else:
            found.add(path)
    return frozenset(found)


@memoised(cycle=frozenset())
def _getter_attributes(index: ModelIndex, cls: ClassInfo, name: str, depth: int) -> frozenset[str]:
    getter = cls.inherited_method(name)
    if getter is None or getter.node is None or depth > 3 or "return" not in getter.text:
        return frozenset()
    found: set[str] = set()
    for value in returned_values(getter.node):
        if not (isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and value.value.value == "self"):
            return frozenset()
        attr = value.attr.value
        if is_property(cls, attr):
            inner = _getter_attributes(index, cls, attr, depth + 1)
            if not inner:
                return frozenset()
            found |= inner
        else:
            found.add(attr)
    return frozenset(found)


@memoised
def returned_attributes(index: ModelIndex, cls: ClassInfo, flat: Flat | None, call: cst.Call) -> frozenset[str]:
    """The attributes of `self` that `call`, made in a method of `cls`, hands back (see the module's docstring):
    a getter of the class, or a function of the program handed `self.<name>` back, or handed `self` and walking
    down an attribute of it (the child that attribute names, or one below it). Empty when it may hand back
    anything else, `self` itself included."""
    func = call.func
    if isinstance(func, cst.Attribute):
        if isinstance(func.value, cst.Name) and func.value.value == "self" and not is_property(cls, func.attr.value):
            return _getter_attributes(index, cls, func.attr.value, 0)
        return frozenset()
    name = call_name(call)
    if not name or "." in name or not call.args:
        return frozenset()
    found = resolve_function(index, flat, name)
    if found is None:
        return frozenset()
    owner, node = found
    attributes: set[str] = set()
    for param in handed_back(owner, node):
        arg = argument_value(node, call, param)
        if isinstance(arg, cst.Attribute) and isinstance(arg.value, cst.Name) and arg.value.value == "self":
            attributes.add(arg.attr.value)  # `unwrap(self.base)`
        elif isinstance(arg, cst.Name) and arg.value == "self" and (walked := _walked_down(node, param)):
            attributes |= walked  # `innermost(self)` walking `m = m.base_layer`
        else:
            return frozenset()
    return frozenset(attributes)


def _walked_down(node: cst.FunctionDef, param: str) -> frozenset[str]:
    """The attributes a function rebinds its parameter to, walking down (`m = m.base_layer`); empty when it binds it
    to anything else too."""
    found: set[str] = set()
    for stmt in small_statements(node.body):
        if type(stmt) is not cst.Assign or len(stmt.targets) != 1:
            continue
        target, value = stmt.targets[0].target, stmt.value
        if not (isinstance(target, cst.Name) and target.value == param):
            continue
        if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and value.value.value == param:
            found.add(value.attr.value)
        else:
            return frozenset()
    return frozenset(found)
