"""Classes held as values: what an attribute of a class family names when it names a class, not an instance.

`self.act = self.act_class(dims)`, `cls = getattr(self, "act_class", None); self.act = cls(dims)`: the built
value is an instance of whatever class the family puts in `act_class`. The family is the class, its bases (of
this file and of the files the program reads) and the subclasses of the checked file; a class value is given

* in a class body: `act_class = ActorPPO`,
* in any method: `self.act_class = ActorPPO`, `self.act_class = getattr(self, "act_class", ActorPPO)`,
* as the default of a lookup anywhere in the family: `getattr(self, "act_class", ActorPPO)`.

A base that leaves the class to its subclasses (`getattr(self, "act_class", None)`, `act_class = None`) and whose
family assigns none learns it from the subclasses in the other files of its package directory
(`package_subclasses`: `class AgentDQN(AgentBase)` beside `AgentBase.py`).

`attribute_values(index, cls, name)` answers with the expressions that name the classes, each with the index of
the file it is written in, so that the caller (`members`) classifies them as it classifies a constructor; a
value that is no class (`None`, a string) is left to the caller too. The answer is the union over the family, as
any of those assignments may be the one in force when the value is called (not exact).

`class_lookup(expr)` tells whether an expression reads such a value: `self.<name>` (no method of that name) or
`getattr(self, "<name>", default)`, and which name.

The same reading answers `attribute_strings(index, cls, name)`: the attribute names a family lists as strings,
`saved_attributes = ("model", "target_model")`, `self.save_attr_names = {"act", "cri"}`, which code walks to reach
its own attributes by name (`for n in self.saved_attributes: getattr(self, n)`).
"""

from __future__ import annotations

import ast
import os
import re

from .index import ClassInfo, ModelIndex, memoised
from .skeleton import dotted as skeleton_dotted
from .tree import const_str, cst, walk

__all__ = [
    "attribute_strings", "attribute_values", "class_lookup", "family", "keyed_attribute_values", "registry_values",
    "string_list",
]


def class_lookup(expr: cst.BaseExpression) -> str | None:
    """The attribute name `expr` reads off `self` as a value: `self.act_class`, `getattr(self, "act_class", D)`."""
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        return expr.attr.value
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "getattr":
        args = [a for a in expr.args if not a.star and a.keyword is None]
        if len(args) >= 2 and isinstance(args[0].value, cst.Name) and args[0].value.value == "self":
            return const_str(args[1].value)
    return None


@memoised
def family(index: ModelIndex, cls: ClassInfo) -> tuple[ClassInfo, ...]:
    """`cls`, its bases of this and other files (each a `ClassInfo` of its own file's index), and the
    subclasses of `cls` in the checked file."""
    found: list[ClassInfo] = []
    stack = [cls]
    while stack and len(found) < 32:
        info = stack.pop(0)
        if info in found:
            continue
        found.append(info)
        stack.extend(info.local_bases)
        stack.extend(base for _owner, base in info.external_bases)
    for other in index.classes.values():
        if other not in found and cls in other.mro:
            found.append(other)
    return tuple(found)


@memoised
def attribute_values(index: ModelIndex, cls: ClassInfo, name: str) -> tuple[tuple[ModelIndex, cst.BaseExpression], ...]:
    """The expressions the family of `cls` assigns to its attribute `name` as a value, or gives as the default of
    `getattr(self, "name", default)`, each with the index of its file (see the module docstring)."""
    found = _values_in(family(index, cls), name)
    if not found and _left_to_subclasses(family(index, cls), name):
        found = _values_in(package_subclasses(index, cls), name)
    unique: dict[tuple[int, str], tuple[ModelIndex, cst.BaseExpression]] = {}
    for owner, value in found:
        unique.setdefault((id(owner), _written(value)), (owner, value))
    return tuple(unique.values())


@memoised
def keyed_attribute_values(
    index: ModelIndex, cls: ClassInfo, name: str
) -> tuple[tuple[ModelIndex, cst.BaseExpression], ...]:
    """The class-naming values of the literal dicts the family of `cls` assigns to its attribute `name`
    (`supported_rnns = {"lstm": nn.LSTM, "gru": nn.GRU}`), each with the index of its file: what `self.name[key]`
    may hold."""
    return tuple(_values_in(family(index, cls), name, _dict_values))


def _dict_values(value: cst.BaseExpression, _name: str) -> list[cst.BaseExpression]:
    if type(value) is not cst.Dict:
        return []
    return [
        e.value for e in value.elements if type(e) is cst.DictElement and type(e.value) in (cst.Name, cst.Attribute)
    ]


@memoised
def attribute_strings(index: ModelIndex, cls: ClassInfo, name: str) -> tuple[str, ...] | None:
    """The strings the family of `cls` lists in its attribute `name`, each assignment a literal tuple, list or set
    of strings; None when any assignment is something else (names only known at run time) or there is none."""
    lists = _values_in(family(index, cls), name, _string_list)
    if not lists or any(found is None for _owner, found in lists):
        return None
    return tuple(dict.fromkeys(s for _owner, found in lists for s in found))


def string_list(value: cst.BaseExpression) -> tuple[str, ...] | None:
    """The strings of a literal tuple, list or set of string constants (`("model", "target")`), else None."""
    if not isinstance(value, (cst.Tuple, cst.List, cst.Set)) or not value.elements:
        return None
    found = [const_str(e.value) if not isinstance(e, cst.StarredElement) else None for e in value.elements]
    return tuple(found) if all(found) else None  # type: ignore[arg-type]


def _string_list(value: cst.BaseExpression, _name: str) -> list:
    return [string_list(value)]


def _left_to_subclasses(classes: tuple[ClassInfo, ...], name: str) -> bool:
    """Does the family leave attribute `name` to a subclass: `getattr(self, "name", None)`, `name = None`?"""
    left = re.compile(
        rf"getattr\(\s*self\s*,\s*[\"']{re.escape(name)}[\"']\s*(?:,\s*None\s*)?\)"
        rf"|^[ \t]+(?:self\.)?{re.escape(name)}[ \t]*(?::[^=\n]*)?=[ \t]*None[ \t]*$",
        re.MULTILINE,
    )
    return any(left.search(info.text) for info in classes)


@memoised
def package_subclasses(index: ModelIndex, cls: ClassInfo) -> tuple[ClassInfo, ...]:
    """Subclasses of `cls`, a class of the checked file, defined in the other files of its package directory (and
    their subclasses in those files): where a base that leaves a class to its subclasses learns which they set.
    Read only for such a base (`_left_to_subclasses`), each file only when its text names `cls` in a class
    statement."""
    if index.project is None or not index.module or not os.path.isfile(index.path):
        return ()
    directory = os.path.dirname(os.path.abspath(index.path))
    package = index.module if index.is_package else index.module.rpartition(".")[0]
    here = os.path.realpath(index.path)
    named = re.compile(rf"^[ \t]*class[ \t]+\w+[ \t]*\([^)]*\b{re.escape(cls.name)}\b", re.MULTILINE)
    found: list[ClassInfo] = []
    try:
        entries = sorted(os.listdir(directory))
    except OSError:
        return ()
    for entry in entries[:_MAX_SIBLINGS]:
        if not entry.endswith(".py") or entry == "__init__.py" or os.path.realpath(os.path.join(directory, entry)) == here:
            continue
        file = index.project.file(f"{package}.{entry[:-3]}" if package else entry[:-3])
        if file is None or not named.search(file.source) or os.path.dirname(os.path.realpath(file.path)) != os.path.dirname(here):
            continue
        other = ModelIndex.of(file, index.project)
        direct = [
            info for info in other.classes.values()
            if any(base.name == cls.name and os.path.realpath(base.index.path) == here for _i, base in _external_bases(info))
        ]
        found += [info for info in other.classes.values() if any(d in info.mro for d in direct)]
    return tuple(found)


_MAX_SIBLINGS = 200  # files of one package directory read for subclasses at most


def _external_bases(info: ClassInfo):
    return [pair for owner in info.mro for pair in owner.external_bases]


def _values_in(classes: tuple[ClassInfo, ...], name: str, read=None) -> list[tuple[ModelIndex, cst.BaseExpression]]:
    """What `classes` assign to their attribute `name` as a value (see `attribute_values`); `read(value, name)`
    gives what an assigned value contributes (the class-naming expressions of `_values` unless told)."""
    read = read or _values
    found: list[tuple[ModelIndex, cst.BaseExpression]] = []
    body = re.compile(rf"^[ \t]+{re.escape(name)}[ \t]*(?::[^=\n]*)?=[^=]", re.MULTILINE)
    mentioned = re.compile(rf"self(?<!\wself)\.{re.escape(name)}\b|[\"']{re.escape(name)}[\"']")  # (word first)
    for info in classes:
        owner = info.index
        if body.search(info.text):
            snippet = owner.parse(info.span)
            node = snippet.node if snippet is not None else None
            for stmt in node.body.body if isinstance(node, cst.ClassDef) else ():
                for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
                    value = _assigned(small, lambda t: isinstance(t, cst.Name) and t.value == name)
                    if value is not None:
                        found += [(owner, v) for v in read(value, name)]
        for method in info.all_methods():
            if method.owner is not info or not mentioned.search(method.text) or method.node is None:
                continue
            params = method.node.params
            defaults = {  # `def __init__(self, core_cls=Core): self.core_cls = core_cls`
                p.name.value: p.default for p in (*params.params, *params.kwonly_params) if p.default is not None
            }
            for node in walk(method.node.body):
                if isinstance(node, cst.BaseSmallStatement):
                    value = _assigned(node, lambda t: class_lookup(t) == name and isinstance(t, cst.Attribute))
                    if isinstance(value, cst.Name) and value.value in defaults:
                        value = defaults[value.value]
                    if value is not None:
                        found += [(owner, v) for v in read(value, name)]
                elif isinstance(node, cst.Call) and class_lookup(node) == name:
                    found += [(owner, v) for v in read(node, name)]
    return found


def _assigned(small: cst.BaseSmallStatement, is_target) -> cst.BaseExpression | None:
    if isinstance(small, cst.Assign) and any(is_target(t.target) for t in small.targets):
        return small.value
    if isinstance(small, cst.AnnAssign) and small.value is not None and is_target(small.target):
        return small.value
    return None


def _values(value: cst.BaseExpression, name: str) -> list[cst.BaseExpression]:
    """The class-naming expressions of an assigned value: a name or dotted name, either branch of a conditional
    expression, the default of `getattr(self, "name", default)`."""
    if isinstance(value, (cst.Name, cst.Attribute)):
        if isinstance(value, cst.Name) and value.value in ("None", "True", "False"):
            return []
        return [] if class_lookup(value) is not None else [value]
    if isinstance(value, cst.IfExp):
        return _values(value.body, name) + _values(value.orelse, name)
    if isinstance(value, cst.BooleanOperation):
        return _values(value.left, name) + _values(value.right, name)
    if isinstance(value, cst.Call) and class_lookup(value) is not None:
        args = [a for a in value.args if not a.star and a.keyword is None]
        return _values(args[2].value, name) if len(args) >= 3 else []
    return []


def _written(value: cst.BaseExpression) -> str:
    parts = []
    while isinstance(value, cst.Attribute):
        parts.append(value.attr.value)
        value = value.value
    if isinstance(value, cst.Name):
        parts.append(value.value)
    return ".".join(reversed(parts))


@memoised
def registry_values(index: ModelIndex, name: str) -> tuple[cst.BaseExpression, ...]:
    """The class-naming elements of a container the file binds at module level to `name` (`NETS = {"mlp": MLP,
    "cnn": CNN}`, `ACTORS = [Actor, ActorDuel]`), and the classes of the file a decorator puts in it (`@register`
    with `def register(cls): NETS[cls.__name__] = cls`, or `@register("mlp")` through an inner function): what
    `NETS[key](...)` may build."""
    tree = index.skeleton.tree
    if tree is None or not re.search(rf"^{re.escape(name)}\s*(?::[^=\n]*)?=", "".join(index.skeleton.lines), re.MULTILINE):
        return ()
    found: list[cst.BaseExpression] = []
    for stmt in tree.body:
        value = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
        if value is None or not any(isinstance(t, ast.Name) and t.id == name for t in targets):
            continue
        elements = value.values if isinstance(value, ast.Dict) else getattr(value, "elts", [])
        for element in elements:
            written = skeleton_dotted(element)
            if written is not None and written not in ("None", "True", "False"):
                found.append(cst.parse_expression(written))
    registrars = {
        stmt.name for stmt in tree.body if isinstance(stmt, ast.FunctionDef) and any(
            isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == name for t in node.targets
            ) for node in ast.walk(stmt)
        )
    }
    for stmt in tree.body if registrars else ():
        if isinstance(stmt, ast.ClassDef) and any(
            (d.func if isinstance(d, ast.Call) else d).__class__ is ast.Name
            and (d.func if isinstance(d, ast.Call) else d).id in registrars for d in stmt.decorator_list
        ):
            found.append(cst.parse_expression(stmt.name))
    return tuple(found)
