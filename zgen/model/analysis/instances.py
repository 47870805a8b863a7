"""Which class a value is an instance of, and what a method of that class does to the class's own parameters.

Two questions the ZG3 rules ask about a call `v.m(...)` outside `C.forward`:

* `attribute_classes(index, cls, name)`: the classes `self.<name>` of `cls` may
  be an instance of. What `__init__` builds (`members.facts`, which follows
  constructors, factory functions of any file the program reads, tuple
  unpacking, wrappers returning their argument) first; else what an annotation
  of the attribute says, in any method or in the class body
  (`self.dist: Distribution | None = dist_class(...)`, `dist: Distribution`), or
  of the `__init__` argument the attribute is bound to (`def __init__(self,
  net: Unet): self.net = net`). An annotation names a base class: the value may
  be any subclass, so it is an `Instance` that is not `exact`.
* `reads_own(index, instance, name)`: what calling `<instance>.<name>(...)`
  computes with of the instance's own parameters (`own.method_uses`, through
  helpers, properties and base classes, in this file or another), for every
  class the call can dispatch to: the class itself and, when the instance is
  not exact, the subclasses of its file and of the checked file that override
  `name`. A parameter small enough that ZeRO-3 keeps it gathered is no hazard,
  except in a module with no forward at all: nothing ever calls it, so no hook
  ever fetched even its small parameters.

`receiver_instance` also types receivers only another class or function of the program (of any file) tells:

* an attribute chain through objects of the program (`self.state.model`, `self.runner.ema`,
  `chained_instance`): each hop an attribute of the class the previous value is an instance of, a module class or a
  plain one (built in its `__init__` or a base's, or an `__init__` argument annotated with it);
* what a call hands back (`returned_instance`): a method of the class, of its file or a base's, or of an object of
  the program, returning a typed value (`def get_model(self): return self.model`); a function of the program
  handing back its argument (`unwrap_model(m)`: `return m.module if hasattr(m, "module") else m`, `handed_back`);
  a module method returning the module (`self.model.float()`); a function we cannot read given a typed module
  first (`accelerator.unwrap_model(self.model)`: a wrapper returns what it was given). A module a function builds
  and returns (a factory, a loader building the model) is new, built whole outside `zero.Init`: no instance of a
  held model, like a module built in the method itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..program import known
from ..program.given import passed_classes
from ..program.holds import RETURNS_MODULE, config_like, held_attributes
from ..program.index import ClassInfo, MethodInfo, ModelIndex, memoised, module_mixin
from ..program.members import UNKNOWN_CLASS, Kind, classify, facts_of, generic_module, member_param, torch_base
from ..program.tree import access_path, call_name, cst, dotted, parameter_for, parameter_names, union_members, walk
from ..program.trigger import word_first
from .access import READ, SIZE, WRITE
from .effects import resolve_function
from .flow import Flat, flat_of, flatten, loop_items, same_items
from .own import OwnUse, method_uses
from .persistence import persistent_param, small_read_gathered
from .reach import method_targets
from .returned import (
    argument_value, function_parameters, handed_back, returned_values, small_statements,
)

__all__ = [
    "Instance", "attribute_classes", "receiver_instance", "dispatch", "never_called", "reads_own", "reads_own_by_name",
    "instance_methods",
    "properties_read", "instance_attributes", "element_instance", "possible_classes",
    "argument_instance", "partitioned_param", "function_arguments", "function_flat", "chained_instance",
    "returned_instance", "handed_back", "plain_attribute_classes", "may_join", "self_attributes",
    "abstract_module_method",
]


@dataclass(frozen=True, slots=True)
class Instance:
    """The classes a value may be an instance of (references as the asking file sees them).

    `exact`: built from these classes (a constructor, a factory's `return C(...)`); else named by an
    annotation, so a subclass may answer a method call."""

    classes: tuple[str, ...]
    exact: bool


@memoised
def attribute_classes(index: ModelIndex, cls: ClassInfo, name: str) -> Instance | None:
    """What `self.<name>` of `cls` is an instance of: a module class built in `__init__`, or one its annotation
    names (on the attribute in any method, in the class body, or on the `__init__` argument it is bound to)."""
    built = facts_of(cls)
    member = built.members.get(name)
    if member is not None and member.kind in (Kind.MODULE, Kind.UNKNOWN):
        known_classes = tuple(c for c in member.classes if c != UNKNOWN_CLASS)
        if known_classes and len(known_classes) == len(member.classes):
            # built from a class held as a value: any class the family assigns, or a subclass of one
            return Instance(known_classes, name not in built.class_built)
    annotated = _annotations(index, cls).get(name)
    if annotated:
        return Instance(annotated, False)
    if not cls.is_module or module_mixin(cls):  # a plain holder, or a mixin using what its heirs build
        held = tuple(c for c in held_attributes(index, cls).get(name, ()) if c != UNKNOWN_CLASS and not generic_module(c))
        if held:
            return Instance(held, True)
    return None


def receiver_instance(
    index: ModelIndex, cls: ClassInfo, flat: Flat | None, expr: cst.BaseExpression, depth: int = 0,
    method: MethodInfo | None = None,
) -> Instance | None:
    """What the receiver of a method call is an instance of, through the binding forms of the function (`flat`)
    and of the class: `self.<attr>`, a `@property` of the class returning one (`self.core`), a local bound to
    either (`v = self.v`, `v = self.a if c else self.b`, `v, n = self.v, 2`), a loop variable or an element by
    index or key of a container of them (`for v in self.vd.values()`, `self.vs[0]`), and, given the `method` the
    function is, a parameter the class's own calls of it bind to one (`self._run(self.v, x)`)."""
    if depth > 4:
        return None
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
        container = expr.value  # `self.vs[0]`, `self.vd["a"]` (a slice is a container again: not one instance)
        if isinstance(container, cst.Attribute) and isinstance(container.value, cst.Name) and container.value.value == "self":
            key = expr.slice[0].slice.value
            written = key.evaluated_value if isinstance(key, cst.SimpleString) else None
            return element_instance(index, cls, container.attr.value, written if isinstance(written, str) else None)
        return None
    if isinstance(expr, cst.IfExp):
        return _union(
            receiver_instance(index, cls, flat, expr.body, depth + 1),
            receiver_instance(index, cls, flat, expr.orelse, depth + 1),
        )
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        name = expr.attr.value
        if name in cls.property_names:
            method = cls.method(name)
            node = method.node if method is not None else None
            returned = [s.value for s in small_statements(node.body) if isinstance(s, cst.Return) and s.value] if node else []
            found = None
            for value in returned:
                found = _union(found, receiver_instance(index, cls, None, value, depth + 1))
            return found
        return attribute_classes(index, cls, name)
    if isinstance(expr, cst.Attribute):
        return chained_instance(index, cls, flat, expr, depth + 1, method)
    if isinstance(expr, cst.Call):
        return returned_instance(index, cls, flat, expr, depth + 1, method)
    if isinstance(expr, cst.Name) and flat is not None:
        found = None
        for node, _ctx in flat.nodes:
            if type(node) is cst.Assign and len(node.targets) == 1:
                for target, value in _bindings(node.targets[0].target, node.value):
                    if target.value == expr.value:
                        found = _union(found, receiver_instance(index, cls, None, value, depth + 1))
            elif type(node) is cst.For or type(node) is cst.CompFor:
                # `for v in self.vs`, `for k, v in self.vd.items()`, `for i, v in enumerate(self.vs[::-1])`
                for part, items in loop_items(node.target, node.iter):
                    if isinstance(part, cst.Name) and part.value == expr.value:
                        found = _union(found, _elements(index, cls, items))
        if found is None and method is not None and depth < 3:
            found = argument_instance(index, cls, method.name, expr.value, depth + 1)
        return found
    return None


@memoised(cycle=None)
def argument_instance(index: ModelIndex, cls: ClassInfo, name: str, param: str, depth: int = 1) -> Instance | None:
    """What parameter `param` of method `name` is an instance of, when the class's own calls of it
    (`self.name(self.v, x)`) bind it to a typed value (the union over the calls)."""
    found = None
    for flat, caller, value in _argument_values(cls, name, param):
        found = _union(found, receiver_instance(index, cls, flat, value, depth, caller))
    return found


def _argument_values(cls: ClassInfo, name: str, param: str):
    """(flat of the caller, caller, argument) for each of the class's own calls `self.name(...)` binding parameter
    `param` of method `name`."""
    method = cls.method(name)
    node = method.node if method is not None else None
    if node is None or param == "self" or param not in parameter_names(node):
        return
    call_text = f"self.{name}("
    for caller in cls.all_methods():
        if caller is method or call_text not in caller.text:
            continue
        flat = flat_of(caller)
        for call, _ctx in flat.nodes if flat is not None else ():
            if type(call) is not cst.Call or not isinstance(call.func, cst.Attribute) or call.func.attr.value != name:
                continue
            if not (isinstance(call.func.value, cst.Name) and call.func.value.value == "self"):
                continue
            for position, arg in enumerate(call.args):
                if not arg.star and parameter_for(node, call, position) == param:
                    yield flat, caller, arg.value


def self_attributes(
    cls: ClassInfo, flat: Flat | None, expr: cst.BaseExpression, method: MethodInfo | None = None, depth: int = 0
) -> frozenset[str] | None:
    """The attributes of `self` a receiver is bound to, through the binding forms `receiver_instance` follows
    (`self.v`, a `@property` returning one, a local bound to either, `v = self.a if c else self.b`, `v, n = self.v,
    2`, a parameter the class's own calls bind to one); None when some binding is anything else (a call, an
    element of a container, a loop variable, an argument from outside the class)."""
    if depth > 4:
        return None
    if isinstance(expr, cst.IfExp):
        body = self_attributes(cls, flat, expr.body, None, depth + 1)
        orelse = self_attributes(cls, flat, expr.orelse, None, depth + 1)
        return body | orelse if body is not None and orelse is not None else None
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        name = expr.attr.value
        if name not in cls.property_names:
            return frozenset({name})
        getter = cls.method(name)
        node = getter.node if getter is not None else None
        returned = [s.value for s in small_statements(node.body) if isinstance(s, cst.Return) and s.value] if node else []
        return _all_attributes([self_attributes(cls, None, value, None, depth + 1) for value in returned])
    if not isinstance(expr, cst.Name) or flat is None:
        return None
    found = []
    for node, _ctx in flat.nodes:
        if type(node) is cst.Assign and len(node.targets) == 1:
            found += [
                self_attributes(cls, None, value, None, depth + 1)
                for target, value in _bindings(node.targets[0].target, node.value) if target.value == expr.value
            ]
        elif type(node).__name__ in _OTHER_BINDINGS:
            bound = node.asname.name if type(node) is cst.WithItem and node.asname else getattr(node, "target", None)
            if bound is not None and expr.value in {n.value for n in walk(bound) if type(n) is cst.Name}:
                return None  # bound some other way (a loop variable, `with ... as v`, `v: T = ...`, `v += ...`)
    if not found and method is not None:
        found = [self_attributes(cls, f, value, caller, depth + 1) for f, caller, value in _argument_values(cls, method.name, expr.value)]
    return _all_attributes(found)


# (names, not the classes: reading `cst.For` here would load libcst when a file with nothing to parse is checked)
_OTHER_BINDINGS = frozenset({"For", "CompFor", "AugAssign", "AnnAssign", "NamedExpr", "WithItem"})


def _all_attributes(found: list[frozenset[str] | None]) -> frozenset[str] | None:
    if not found or any(f is None for f in found):
        return None
    return frozenset().union(*found)  # type: ignore[arg-type]


def _from_self(expr: cst.BaseExpression) -> bool:
    """`self.v`, `self.vs[0]`, `self.core` (an attribute of `self`, or an element of one)."""
    if isinstance(expr, cst.Subscript):
        expr = expr.value
    return isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self"


@memoised
def function_arguments(index: ModelIndex, name: str) -> dict[str, Instance]:
    """Parameters of the file's function `name` that the calls of it in the file's classes bind to a typed value
    of their own (`run(self.v, x)` in a forward: `v` is an instance of `self.v`'s classes), the union over the
    calls."""
    called = re.compile(word_first(name, r"[\w.]") + r"\s*\([^()]*\bself\.")  # handed something of `self`
    # (the text pre-filter, the function's name first: a search for every plain call of every class cost more)
    if not any(called.search(cls.text) for cls in index.classes.values()):
        return {}
    span = index.skeleton.functions.get(name)
    snippet = index.parse(span) if span is not None else None
    node = snippet.node if snippet is not None else None
    if not isinstance(node, cst.FunctionDef):
        return {}
    found: dict[str, Instance] = {}
    for cls in index.classes.values():
        for method in cls.all_methods():
            if method.owner is not cls or not called.search(method.text):
                continue
            flat = flat_of(method)
            for call, _ctx in flat.nodes if flat is not None else ():
                if type(call) is not cst.Call or not isinstance(call.func, cst.Name) or call.func.value != name:
                    continue
                for position, arg in enumerate(call.args):
                    if arg.star or not _from_self(arg.value):
                        continue  # only what the class hands of its own (`self.v`, `self.vs[0]`) is typed here
                    param = parameter_for(node, call, position)
                    typed = receiver_instance(index, cls, flat, arg.value, 1, method) if param else None
                    if typed is not None:
                        found[param] = _union(found.get(param), typed)  # type: ignore[index]
    return found


@memoised
def function_flat(index: ModelIndex, name: str) -> Flat | None:
    """The flattened body of the file's function `name`."""
    span = index.skeleton.functions.get(name)
    snippet = index.parse(span) if span is not None else None
    return flatten(snippet.node) if snippet is not None and isinstance(snippet.node, cst.FunctionDef) else None


def _elements(index: ModelIndex, cls: ClassInfo, items: cst.BaseExpression) -> Instance | None:
    """What iterating over `items` yields instances of: a container attribute of `self` (also sliced, its
    `.values()`/`.items()`), or `self.children()`/`self.modules()` (any child)."""
    items = same_items(items)
    while isinstance(items, cst.Subscript):
        items = items.value
    if isinstance(items, cst.Call) and isinstance(items.func, cst.Attribute) and not items.args:
        owner, method = items.func.value, items.func.attr.value
        if isinstance(owner, cst.Name) and owner.value == "self" and method in ("children", "modules"):
            found = None
            for instance in instance_attributes(index, cls).values():
                found = _union(found, instance)
            return found
        if method in ("values", "items"):
            items = owner
    if isinstance(items, cst.Attribute) and isinstance(items.value, cst.Name) and items.value.value == "self":
        return element_instance(index, cls, items.attr.value)
    return None


@memoised
def element_instance(index: ModelIndex, cls: ClassInfo, name: str, key: str | None = None) -> Instance | None:
    """What the modules of the container `self.<name>` (a `ModuleList`/`ModuleDict`/`Sequential`, a list or dict)
    are instances of: the classes the members know, else each element of the literal `__init__` fills it with
    (`nn.ModuleList([self.enc, self.dec])`, `nn.ModuleDict({"a": self.v})`, `dict(a=self.v)`), typed as an
    attribute (`receiver_instance`), or it stores under a key (`self.nets[k] = Encoder(d)`, `self.nets["rnn"] =
    build_rnn(d)`: what the construction or the factory makes); with the constant `key` an element is taken by,
    only what is stored under that key when something is."""
    member = facts_of(cls).members.get(name)
    if member is not None and member.kind == Kind.CONTAINER and member.classes:
        if all(c != UNKNOWN_CLASS for c in member.classes):
            return Instance(member.classes, True)
    found = None
    stored: dict[str | None, tuple[str, ...]] = {}  # the constant key (None: any other) -> the classes stored
    for method in cls.init_methods:
        if f"self.{name}" not in method.text or method.node is None:
            continue
        for small in small_statements(method.node.body):
            if not isinstance(small, cst.Assign):
                continue
            if any(_self_attribute(t.target) and t.target.attr.value == name for t in small.targets):  # type: ignore[union-attr]
                for element in _literal_elements(small.value):
                    if _self_attribute(element):
                        found = _union(found, receiver_instance(index, cls, None, element, 1))
                continue
            for target in (t.target for t in small.targets):
                if not (isinstance(target, cst.Subscript) and _self_attribute(target.value) and len(target.slice) == 1):
                    continue
                if target.value.attr.value != name or not isinstance(target.slice[0].slice, cst.Index):  # type: ignore[union-attr]
                    continue
                kind, classes = classify(index, small.value, cls=cls)
                if kind != Kind.MODULE or not classes or UNKNOWN_CLASS in classes:
                    return None  # something stored we cannot type: the element may be anything
                written = target.slice[0].slice.value
                at = written.evaluated_value if isinstance(written, cst.SimpleString) else None
                at = at if isinstance(at, str) else None
                stored[at] = (*stored.get(at, ()), *classes)
    if key is not None and key in stored:
        return _union(found, Instance(stored[key], True))
    for classes in stored.values():
        found = _union(found, Instance(classes, True))
    return found


def _literal_elements(value: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The elements a container literal holds, through one wrapping call (`nn.ModuleList([...])`, `dict(a=...)`)."""
    if isinstance(value, cst.Call):
        args = [a for a in value.args if not a.star]
        if args and all(a.keyword is not None for a in args):  # `dict(a=x, b=y)`, `nn.ModuleDict(dict(...))`'s inside
            return [a.value for a in args]
        if len(args) != 1 or args[0].keyword is not None:
            return []
        value = args[0].value
        if isinstance(value, cst.Call):
            return _literal_elements(value)
    if isinstance(value, (cst.List, cst.Tuple, cst.Set)):
        return [e.value for e in value.elements if not isinstance(e, cst.StarredElement)]
    if isinstance(value, cst.Dict):
        return [e.value for e in value.elements if isinstance(e, cst.DictElement)]
    return []


def _bindings(target: cst.BaseExpression, value: cst.BaseExpression):
    """(name, value) pairs an assignment binds: `v = e`, and `v, n = e, k` element by element."""
    if isinstance(target, cst.Name):
        yield target, value
    elif isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)):
        if len(target.elements) == len(value.elements):
            for t, v in zip(target.elements, value.elements):
                if not isinstance(t, cst.StarredElement) and not isinstance(v, cst.StarredElement):
                    yield from _bindings(t.value, v.value)


def _union(a: Instance | None, b: Instance | None) -> Instance | None:
    if a is None or b is None:
        return a or b
    return Instance(tuple(dict.fromkeys(a.classes + b.classes)), a.exact and b.exact)


@memoised
def instance_attributes(index: ModelIndex, cls: ClassInfo) -> dict[str, Instance]:
    """Attributes of `cls` that are instances of module classes we can name: built in `__init__` (however the
    members see it) or annotated (on the attribute, in the class body, or on the `__init__` argument bound to
    it)."""
    names = [*facts_of(cls).members, *_annotations(index, cls)]
    found = {name: attribute_classes(index, cls, name) for name in dict.fromkeys(names)}
    return {name: instance for name, instance in found.items() if instance is not None}


@memoised
def _annotations(index: ModelIndex, cls: ClassInfo) -> dict[str, tuple[str, ...]]:
    """Attributes of `cls` annotated with a module class: `self.x: C = ...` in any method, `x: C` in the class
    body, and `self.x = arg` for an `__init__` argument `arg: C`."""
    found: dict[str, tuple[str, ...]] = {}
    body = " " * (cls.span.indent + 4)  # a class-body annotation, not a parameter of a multi-line signature
    if any(line.startswith(body) and not line[len(body)].isspace() for line in _BODY_ANNOTATION.findall(cls.text)):
        snippet = index.parse(cls.span)
        node = snippet.node if snippet is not None else None
        for stmt in node.body.body if isinstance(node, cst.ClassDef) else ():
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                        _add(found, small.target.value, _module_classes(index, small.annotation.annotation))
    built_here = cls.name in _built_with_modules(index)
    for span in cls.span.methods.values():
        text = index.skeleton.text(span.start, span.end)
        typed_init = span.name == "__init__" and _TYPED_ARGUMENT.search(text[: text.find(":\n") + 1] or text)
        passed = span.name == "__init__" and built_here  # the file's constructions may say what is passed
        if not typed_init and not passed and not _SELF_ANNOTATION.search(text):
            continue
        method = index.method_info(cls, span).node
        if method is None:
            continue
        arguments: dict[str, tuple[str, ...]] = {}
        if typed_init or passed:
            params = method.params
            positional = [p.name.value for p in (*params.posonly_params, *params.params)][1:]
            for param in (*params.posonly_params, *params.params, *params.kwonly_params):
                if param.annotation is not None and not config_like(param.name.value):  # `config: BertConfig`
                    classes = _module_classes(index, param.annotation.annotation)
                    if classes:
                        arguments[param.name.value] = classes
                elif param.annotation is None and passed and param.name.value in positional:
                    # `SubModule(self, indices)` in `FNOBlocks`, `Residual(Block(d))`: every construction of the
                    # class in the file passes a module of a class we can name
                    given = passed_classes(index, cls.name, param.name.value, positional.index(param.name.value))
                    classes = tuple(c for ref in given or () for c in _named_class(index, ref))
                    if given and len(classes) == len(given):
                        arguments[param.name.value] = classes
        for small in small_statements(method.body):
            if isinstance(small, cst.AnnAssign) and _self_attribute(small.target):
                _add(found, small.target.attr.value, _module_classes(index, small.annotation.annotation))  # type: ignore[union-attr]
            elif isinstance(small, cst.Assign) and (argument := _argument_kept(small.value, arguments)) is not None:
                for target in small.targets:
                    if _self_attribute(target.target):
                        _add(found, target.target.attr.value, arguments[argument])  # type: ignore[union-attr]
    return found


@memoised
def _built_with_modules(index: ModelIndex) -> frozenset[str]:
    """Text pre-filter of `given.passed_classes`: names of the classes the file builds handing them `self` or a
    construction (`SubModule(self, i)`, `Residual(Block(d))`), not in a `class` statement."""
    return frozenset(
        m.group(1) for m in _BUILT_WITH_MODULE.finditer(index.source)
        if not index.source[max(0, m.start() - 6): m.start()].endswith("class ")
    )


# `Name(self, ...)`, `Name(x, Other(...))`: a class built with `self` or a construction among its arguments.
_BUILT_WITH_MODULE = re.compile(r"(?<![\w.])([A-Z]\w*)\(\s*(?:[^()\n]*,\s*)?(?:self\s*[,)]|[A-Z]\w*\()")


def _argument_kept(value: cst.BaseExpression, arguments: dict[str, tuple[str, ...]]) -> str | None:
    """The typed argument `value` keeps: `arg`, `arg.requires_grad_(False)` or `arg.to(d)` (a module method that
    hands the module back), either of them `if <test> else None`."""
    if isinstance(value, cst.IfExp):
        kept = [_argument_kept(v, arguments) for v in (value.body, value.orelse) if not _is_none(v)]
        return kept[0] if len(kept) == 1 else None
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in RETURNS_MODULE:
        value = value.func.value
    return value.value if isinstance(value, cst.Name) and value.value in arguments else None


def _is_none(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Name) and value.value == "None"


# Text triggers: `self.dist: Distribution = ...`; an argument annotated with a capitalised name (`net: Unet`,
# `net: "Unet"`, `net: Optional[Unet]`); a class-body annotation (`dist: Distribution`).
_SELF_ANNOTATION = re.compile(r"self(?<!\wself)\.\w+[ \t]*:[ \t]*[\w\"'.]")
_TYPED_ARGUMENT = re.compile(r"\w[ \t]*:[ \t]*(?:[\w.]*\[)?[\"']?(?:\w+\.)*[A-Z]")
_BODY_ANNOTATION = re.compile(r"^[ \t]+\w+[ \t]*:[ \t]*(?:[\w.]*\[)?[\"']?(?:\w+\.)*[A-Z]\w*[^=(,\n]*$", re.MULTILINE)


def _self_attribute(target: cst.BaseExpression) -> bool:
    return isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self"


def _add(found: dict[str, tuple[str, ...]], name: str, classes: tuple[str, ...]) -> None:
    if classes:
        found[name] = found.get(name, ()) + tuple(c for c in classes if c not in found.get(name, ()))


def _module_classes(index: ModelIndex, annotation: cst.BaseExpression) -> tuple[str, ...]:
    """Module classes an annotation names: `C`, `C | None`, `Optional[C]`, `"C"`, `Union[C, D]`, of this file
    or read from another; containers (`list[C]`) and torch's own layers are not instances of one class here."""
    found: list[str] = []
    for node in reversed(union_members(annotation)):  # (right to left, as the classes have always been listed)
        if isinstance(node, cst.SimpleString):
            written = node.evaluated_value if isinstance(node.evaluated_value, str) else None
            if written and written.replace(".", "").replace("_", "").isalnum():
                found += _named_class(index, written)
        elif isinstance(node, (cst.Name, cst.Attribute)):
            written = dotted(node)
            if written:
                found += _named_class(index, written)
    return tuple(dict.fromkeys(found))


def _named_class(index: ModelIndex, written: str) -> list[str]:
    local = index.local_class(written)
    if local is not None:
        return [local.name] if local.is_module and torch_base(local) is None else []
    external = index.external(index.qualify(written))
    if external is not None and external[1].is_module and torch_base(external[1]) is None:
        return [index.qualify(written)]
    return []


def abstract_module_method(index: ModelIndex, ref: str, name: str) -> bool:
    """Is `name` an `@abstractmethod` of module class `ref` (an interface such as `AdapterBase(nn.Module, ABC)`
    with `def encode(self, x)` left to implement)? A module class that implements it is what the interface is
    for: it computes there with parameters of its own, which the interface's holder cannot see."""
    found = index.located(ref)
    if found is None or not found[1].is_module or name == "forward":
        return False
    method = found[1].method(name)
    text = method.text if method is not None else ""
    node = method.node if "abstractmethod" in text or "NotImplementedError" in text else None
    declared = node is not None and any(
        (dotted(d.decorator) or "").rsplit(".", 1)[-1] == "abstractmethod" for d in node.decorators
    )
    if node is None or not declared and (
        _NAMED_AS_NO_RUN.fullmatch(name) or not _interface(found[1]) or not _left_to_implement(node)
    ):
        return False
    # given values to compute with (`encode(self, x)`), and not answering a number (`output_size(self) -> int`)
    given = [p for p in (*node.params.params, *node.params.kwonly_params) if p.name.value not in ("self", "cls")]
    answer = dotted(node.returns.annotation) if node.returns is not None else None
    return bool(given or isinstance(node.params.star_arg, cst.Param)) and answer not in _PLAIN_ANSWERS


_PLAIN_ANSWERS = frozenset({"int", "float", "bool", "str", "None", "tuple", "list", "dict"})


# Names of a stub that hands back or sets a fact of the model, or reports it (`get_optimizer`, `set_epoch`,
# `train_log`), not a step that runs its layers (`train_step`, `test_run`).
_NAMED_AS_NO_RUN = re.compile(r"(?:get|is|has|set|configure|format)_\w+|\w*_?(?:log|logs|print|plot|save|load)")


def _interface(cls: ClassInfo) -> bool:
    """Is `cls` an abstract base by its own declaration (`class TrainerModel(ABC, nn.Module)`, a metaclass of
    `ABCMeta`, an `@abstractmethod` of its own), not a concrete class that inherits one and refuses a method?"""
    return any(base.rsplit(".", 1)[-1] in ("ABC", "ABCMeta") for base in cls.span.bases) or (
        "metaclass=ABCMeta" in cls.text.partition(":")[0] or "@abstractmethod" in cls.text
    )


def _left_to_implement(node: cst.FunctionDef) -> bool:
    """Does the method only raise `NotImplementedError` (after its docstring and a message it builds: `msg = "..."`),
    the contract of a base whose subclasses must implement it (`def train_step(self, batch, criterion): raise
    NotImplementedError`)? Not `pass` or `...`: an optional hook that does nothing by default."""
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    statements = [line for stmt in body for line in (stmt.body if isinstance(stmt, cst.SimpleStatementLine) else [stmt])]
    for stmt in statements[:-1]:
        value = stmt.value if isinstance(stmt, (cst.Expr, cst.Assign)) else None
        if not isinstance(value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            return False  # (the docstring, or `msg = " [!] not implemented."`)
    last = statements[-1] if statements else None
    if not isinstance(last, cst.Raise) or last.exc is None:
        return False
    raised = last.exc.func if isinstance(last.exc, cst.Call) else last.exc
    return (dotted(raised) or "").rsplit(".", 1)[-1] == "NotImplementedError"


@memoised
def dispatch(index: ModelIndex, ref: str, name: str, exact: bool) -> tuple[tuple[ModelIndex, str], ...]:
    """The classes (their file's index and their name there) a call `<instance of ref>.<name>(...)` may run:
    `ref` itself and, for an instance that is not exact, the subclasses of `ref` in its own file and in the
    checked file that define `name` themselves."""
    found = index.located(ref)
    if found is None:
        return ((index, ref),)  # a torch layer or a class no file we read defines: `method_uses` knows what it can
    owner, info = found
    targets = [(owner, info.name)]
    if not exact:
        for where in (owner, index) if owner is not index else (owner,):
            for other in where.classes.values():
                if other is info or name not in other.span.methods:
                    continue
                if info in other.mro or any(base is info for _i, base in _all_external_bases(other)):
                    targets.append((where, other.name))
    return tuple(dict.fromkeys(targets))


@memoised
def possible_classes(index: ModelIndex, instance: Instance) -> tuple[tuple[ModelIndex, str], ...]:
    """The classes (their file's index and their name there) a value typed `instance` may be built from: its
    classes and, when it is not exact (an annotation names a base), every subclass of them in their own file and
    in the checked file."""
    found: list[tuple[ModelIndex, str]] = []
    for ref in instance.classes:
        info = index.located(ref)
        if info is None:
            found.append((index, ref))
            continue
        owner, cls = info
        found.append((owner, cls.name))
        if instance.exact:
            continue
        for where in (owner, index) if owner is not index else (owner,):
            for other in where.classes.values():
                if other is not cls and (cls in other.mro or any(base is cls for _i, base in _all_external_bases(other))):
                    found.append((where, other.name))
    return tuple(dict.fromkeys(found))


def partitioned_param(index: ModelIndex, instance: Instance, name: str) -> bool | None:
    """Is `name` a parameter of a value typed `instance` that ZeRO-3 leaves partitioned outside its forward? True
    when some class it may be built from registers it above the persistence threshold (or in a module with no
    forward, whose hooks never ran), False when every class that registers it keeps it gathered, None when none
    registers it (a buffer, a plain attribute, a class we cannot read)."""
    found = None
    for owner, ref in possible_classes(index, instance):
        if member_param(owner, ref, name) is not True:
            continue
        if not persistent_param(owner, ref, name) or never_called(owner, ref):
            return True
        found = False
    return found


def _all_external_bases(cls: ClassInfo) -> list[tuple[ModelIndex, ClassInfo]]:
    return [pair for info in cls.mro for pair in info.external_bases]


@memoised
def never_called(index: ModelIndex, name: str) -> bool:
    """A module class of the file with no forward of its own or inherited, and no torch layer base: nothing calls
    it as a module, so no hook ever gathers its parameters, not even those ZeRO-3 keeps gathered once fetched."""
    info = index.classes.get(name)
    if info is None or not info.is_module or torch_base(info) is not None or info.container_kind:
        return False
    for base in (b for owner in info.mro for b in owner.qualified_bases):
        if base.rsplit(".", 1)[-1] != "Module" and index.local_class(base) is None and index.external(base) is None:
            return False  # a base we cannot read may define the forward
    return info.inherited_method("forward") is None and info.inherited_method("__call__") is None


def reads_own(
    index: ModelIndex, instance: Instance, name: str, uses: tuple[str, ...] = (READ, SIZE, WRITE),
    in_forward: bool = True,
) -> OwnUse | None:
    """The first use of a parameter that calling `<instance>.<name>(...)` makes with no hook of the instance
    gathering it: its own or its children's, read, sized or written (by `uses`), in any class the call may
    dispatch to. A parameter ZeRO-3 keeps gathered is left out only for a call made in forward context
    (`in_forward`; outside it an optional one too: `persistence.small_read_gathered`), and only of a class whose
    forward can run (else nothing ever fetched it)."""
    for ref in instance.classes:
        targets = dispatch(index, ref, name, instance.exact)
        if len(targets) == 1 and abstract_module_method(*targets[0], name):
            # an interface's abstract method: only a subclass can be built, of this file or one we cannot see
            targets = dispatch(index, ref, name, False)
            if len(targets) == 1:
                # the subclasses of the package's other files filling it in, which the base's file need not import
                # (`score_hrt` of pykeen's `Model`, filled in by `ERModel` of `nbase.py`): what they read is what
                # the call reads
                targets = _package_overrides(*targets[0], name)
            if not targets:  # none we read fills it in: a module of the user's computes there
                return OwnUse(READ, f"{ref.rsplit('.', 1)[-1]}.{name}(self)", False)
        for owner, target in targets:
            for called in (name, *properties_read(owner, target, name)):
                for use in method_uses(owner, target, called):
                    if use.use not in uses or not use.on_self:
                        continue
                    # a class with no forward: nothing ever fetched even its small parameters
                    if not small_read_gathered(use.persistent, in_forward, use.optional) or never_called(owner, target):
                        return use
    return None


def _package_overrides(index: ModelIndex, ref: str, name: str) -> tuple[tuple[ModelIndex, str], ...]:
    """The classes of other files of the package that override `name`, an abstract method of module class `ref`
    (`reach.method_targets`: the files defining a method of that name), with their file's index."""
    found = index.located(ref)
    if found is None:
        return ()
    overrides = [method for method in method_targets(index, found[1], name) if method.owner is not found[1]]
    if any(_walks_submodules(reached) for method in overrides for reached in method.owner.reachable(name, inherited=True)):
        return ()  # what runs there is no override's own: the modules of the tree, of any class, any method
    return tuple(dict.fromkeys((method.index, method.owner.name) for method in overrides))


def _walks_submodules(method: MethodInfo) -> bool:
    """Does the method call a method other than the module API on the items of a walk of its module tree (`for r in
    self.modules(): r.pop_term()`)? Each item may be a module of any class, its method reading what it holds
    (parameters of other modules handed to it), which no class the walk names tells."""
    if ".modules()" not in method.text and ".children()" not in method.text:
        return False
    flat = flat_of(method)
    walked: set[str] = set()
    for node, _ctx in flat.nodes if flat is not None else ():
        if type(node) is cst.For or type(node) is cst.CompFor:
            for part, items in loop_items(node.target, node.iter):
                if isinstance(part, cst.Name) and isinstance(items, cst.Call) and isinstance(items.func, cst.Attribute) \
                        and items.func.attr.value in ("modules", "children") and not items.args:
                    walked.add(part.value)
    return bool(walked) and any(
        type(node) is cst.Call and isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Name)
        and node.func.value.value in walked and node.func.attr.value not in known.NOT_RUNS
        and node.func.attr.value not in ("forward", "__call__")
        for node, _ctx in flat.nodes
    )


def reads_own_by_name(
    index: ModelIndex, instance: Instance, name: str, uses: tuple[str, ...] = (READ, SIZE, WRITE),
    in_forward: bool = True,
) -> OwnUse | None:
    """`reads_own` for a module of a class nothing names, taken to be one of `instance.classes` (the module classes
    that define `name`): a use only when every one of them makes one. A name several classes share tells little by
    itself (`get_bias` computes with a relative position table in one class and runs an MLP child in another); over
    the labelled corpus, of the shared names some class reads its own parameters in, all do for a third
    (`bench/zg3_byname.py`)."""
    found = None
    for ref in instance.classes:
        use = reads_own(index, Instance((ref,), instance.exact), name, uses, in_forward)
        if use is None:
            return None
        found = found or use
    return found


@memoised
def properties_read(index: ModelIndex, ref: str, name: str) -> tuple[str, ...]:
    """The `@property` methods of class `ref` that method `name` (or a method it reaches on `self`) reads."""
    info = index.classes.get(ref)
    if info is None:
        return ()
    props = info.property_names - {name}
    if not props:
        return ()
    texts = "".join(m.text for m in info.reachable(name))
    return tuple(sorted(p for p in props if re.search(rf"self(?<!\wself)\.{p}\b(?!\s*\()", texts)))


@memoised
def instance_methods(index: ModelIndex, cls: ClassInfo) -> frozenset[str]:
    """Names of the methods (not dunders) of the classes `cls`'s attributes are instances of (of any file), and
    of their subclasses that override them: what a call on such an attribute could run."""
    names: set[str] = set()
    containers = [element_instance(index, cls, n) for n, m in facts_of(cls).members.items() if m.kind == Kind.CONTAINER]
    for instance in (*instance_attributes(index, cls).values(), *(c for c in containers if c is not None)):
        for ref in instance.classes:
            found = index.located(ref)
            if found is None or found[0] is index and instance.exact:
                continue  # a class of this file: its methods are the file's own, which the rules list already
            owner, info = found
            names.update(n for n in info.method_names if not n.startswith("__"))
            for other in owner.classes.values() if not instance.exact else ():
                if info in other.mro:
                    names.update(n for n in other.span.methods if not n.startswith("__"))
    return frozenset(names)


# --- joins: receivers only another class or function of the program types -------------------------------------

# Module methods that hand back the module itself (`self.model.float().sample(x)`).
_RETURNS_SELF = frozenset({"to", "cuda", "cpu", "float", "half", "bfloat16", "double", "train", "eval", "requires_grad_"})


def chained_instance(
    index: ModelIndex, cls: ClassInfo, flat: Flat | None, expr: cst.Attribute, depth: int, method: MethodInfo | None,
):
    """What `<value>.<name>` is an instance of, for a value of a class of the program (`self.state.model`)."""
    if depth > 6:
        return None
    found = None
    for owner, info in _object_classes(index, cls, flat, expr.value, depth, method):
        typed = attribute_classes(owner, info, expr.attr.value)
        if typed is not None:
            found = _union(found, _as_seen(index, owner, typed))
    return found


def member_instance(index: ModelIndex, instance: Instance, parts: tuple[str, ...]) -> Instance | None:
    """What `<value>.<parts...>` is an instance of, for a value typed `instance` (`holder.book` of an argument
    `holder` bound to a `Holder`, whose `__init__` builds `self.book = Codebook(...)`)."""
    found: Instance | None = instance
    for part in parts:
        step = None
        for owner, info in _infos(index, found):
            typed = attribute_classes(owner, info, part)
            if typed is not None:
                step = _union(step, _as_seen(index, owner, typed))
        found = step
        if found is None:
            return None
    return found


def annotated_receiver(index: ModelIndex, function: cst.FunctionDef, expr: cst.BaseExpression) -> Instance | None:
    """What `<arg>.<parts...>` is an instance of in a function whose argument `arg` is annotated with a plain class
    of the program (`def evaluate(trainer: Trainer, z): trainer.model.book.quantize(z)`): through each class's
    attributes, a trainer's annotated model and that model's members."""
    path = access_path(expr)
    if path is None or not path.parts or "[]" in path.parts:
        return None
    param = next((p for p in (*function.params.params, *function.params.kwonly_params) if p.name.value == path.root), None)
    written = _written(param.annotation.annotation) if param is not None and param.annotation is not None else None
    found = _plain_class(index, written) if written else None
    if found is None:
        return None
    owner, info = found
    typed = attribute_classes(owner, info, path.parts[0])
    typed = _as_seen(index, owner, typed) if typed is not None else None
    return member_instance(index, typed, path.parts[1:]) if typed is not None else None


def _as_seen(index: ModelIndex, owner: ModelIndex, typed):
    """`typed`'s class references as `index` names them (`Net` of another file is `pkg.net.Net` here)."""
    if owner is index:
        return typed
    return Instance(tuple(owner.global_name(c) for c in typed.classes), typed.exact)


def _object_classes(
    index: ModelIndex, cls: ClassInfo, flat: Flat | None, expr: cst.BaseExpression, depth: int,
    method: MethodInfo | None,
) -> list[tuple[ModelIndex, ClassInfo]]:
    """The classes of the program (module or plain, with their file's index) a value may be an instance of."""
    found: list[tuple[ModelIndex, ClassInfo]] = []
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        found += plain_attribute_classes(index, cls, expr.attr.value)
    elif isinstance(expr, cst.Attribute) and depth <= 6:
        for owner, info in _object_classes(index, cls, flat, expr.value, depth + 1, method):
            found += [(o, i) for o, i in plain_attribute_classes(owner, info, expr.attr.value)]
            typed = attribute_classes(owner, info, expr.attr.value)
            found += _infos(owner, typed)
    typed = receiver_instance(index, cls, flat, expr, depth, method)  # the chain counted the step already
    found += _infos(index, typed)
    return list(dict.fromkeys(found))


def _infos(index: ModelIndex, typed) -> list[tuple[ModelIndex, ClassInfo]]:
    """The classes an `Instance` names, read (its own classes; subclasses do not add attributes we look up)."""
    found = []
    for ref in typed.classes if typed is not None else ():
        info = index.located(ref)
        if info is not None:
            found.append(info)
    return found


@memoised
def plain_attribute_classes(index: ModelIndex, cls: ClassInfo, name: str) -> tuple[tuple[ModelIndex, ClassInfo], ...]:
    """Classes of the program that are no modules and `self.<name>` of `cls` is built from in its `__init__` (or a
    base's, of any file), or bound to from an `__init__` argument annotated with one (`state: TrainState`)."""
    found: list[tuple[ModelIndex, ClassInfo]] = []
    target = f"self.{name}"
    for owner in _with_bases(cls):
        init = owner.method("__init__")
        if init is None or target not in init.text or init.node is None:
            continue
        annotated = {}
        params = init.node.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.annotation is not None:
                written = _written(param.annotation.annotation)
                if written:
                    annotated[param.name.value] = written
        flat = flat_of(init)
        for node, _ctx in flat.nodes if flat is not None else ():
            if type(node) is not cst.Assign or not any(_is_target(t.target, name) for t in node.targets):
                continue
            value = node.value
            written = call_name(value) if isinstance(value, cst.Call) else None
            if written is None and isinstance(value, cst.Name):
                written = annotated.get(value.value)
            info = _plain_class(owner.index, written) if written else None
            if info is not None:
                found.append(info)
    return tuple(dict.fromkeys(found))


def _with_bases(cls: ClassInfo) -> list[ClassInfo]:
    """`cls`, its in-file bases and the bases of other files (each class whose `__init__` may set an attribute)."""
    found = list(cls.mro)
    for info in cls.mro:
        for _index, base in info.external_bases:
            found += [b for b in _with_bases(base) if b not in found]
    return found


def _is_target(target: cst.BaseExpression, name: str) -> bool:
    return (
        isinstance(target, cst.Attribute) and target.attr.value == name
        and isinstance(target.value, cst.Name) and target.value.value == "self"
    )


def _written(annotation: cst.BaseExpression) -> str | None:
    """The class an annotation names, spelt (`State`, `"State"`, `core.State`); not a container or union."""
    if isinstance(annotation, cst.SimpleString):
        text = annotation.evaluated_value
        return text if isinstance(text, str) and text.replace(".", "").replace("_", "").isalnum() else None
    if isinstance(annotation, cst.Name):
        return annotation.value
    if isinstance(annotation, cst.Attribute):
        return call_name(cst.Call(func=annotation))
    return None


def _plain_class(index: ModelIndex, written: str) -> tuple[ModelIndex, ClassInfo] | None:
    """The class of the program, not a module, that a name written in `index`'s file refers to."""
    local = index.local_class(written)
    if local is not None:
        return None if local.is_module else (index, local)
    if not written.rsplit(".", 1)[-1][:1].isupper():
        return None
    external = index.external(index.qualify(written))
    if external is None or external[1].is_module:
        return None
    return external


def returned_instance(
    index: ModelIndex, cls: ClassInfo, flat: Flat | None, call: cst.Call, depth: int, method: MethodInfo | None,
):
    """What the value `call` hands back is an instance of (see the module's docstring)."""
    if depth > 6:
        return None
    func = call.func
    if isinstance(func, cst.Attribute):
        if isinstance(func.value, cst.Name) and func.value.value == "self":
            target = cls.inherited_method(func.attr.value)
            if target is None:
                return None
            return _method_returns(index, cls, flat, call, (index, cls), target, depth, method)
        if func.attr.value in _RETURNS_SELF:
            return receiver_instance(index, cls, flat, func.value, depth + 1, method)
        owners = _object_classes(index, cls, flat, func.value, depth + 1, method)
        if owners:  # a method of an object of the program (`self.runner.unwrap(self.model)`): its class says
            typed = None
            for owner, info in owners:
                target = info.inherited_method(func.attr.value)
                if target is not None:
                    typed = _union(
                        typed, _method_returns(index, cls, flat, call, (owner, info), target, depth, method)
                    )
            return typed
    name = call_name(call)
    if name == "getattr" and len(call.args) == 3 and not any(a.star or a.keyword for a in call.args):
        # `getattr(model, "module", model)`: the wrapped module, or the model itself
        return receiver_instance(index, cls, flat, call.args[2].value, depth + 1, method)
    if not name or name.startswith(".") or name in known.PYTHON_BUILTINS:
        return None
    found = resolve_function(index, flat, name) if name.partition(".")[0] != "self" else None
    if found is not None:
        owner, node = found
        typed = None
        for param in handed_back(owner, node):
            arg = argument_value(node, call, param)
            if arg is not None:
                typed = _union(typed, receiver_instance(index, cls, flat, arg, depth + 1, method))
        return typed
    if name.rsplit(".", 1)[-1][:1].isupper() or not call.args or call.args[0].keyword is not None or call.args[0].star:
        return None  # a class (a wrapper module of its own), or nothing handed first
    # a function we cannot read handed a module first: a wrapper hands back what it was given (`unwrap_model(m)`)
    return receiver_instance(index, cls, flat, call.args[0].value, depth + 1, method)



def _method_returns(
    index: ModelIndex, cls: ClassInfo, flat: Flat | None, call: cst.Call, owner: tuple[ModelIndex, ClassInfo],
    target: MethodInfo, depth: int, method: MethodInfo | None,
):
    """What a call of method `target` of `owner` (the class of `self` in its body, with its file's index) hands back:
    an argument it returns, typed where the call is, or what it returns typed in its own body (`return self.model`,
    `model = self.ema if c else self.net; return model`)."""
    node = target.node
    if node is None or "return" not in target.text:
        return None
    typed = None
    for param in handed_back(target.index, node):
        arg = argument_value(node, call, param)
        if arg is not None:
            typed = _union(typed, receiver_instance(index, cls, flat, arg, depth + 1, method))
    inner = flat_of(target)
    where, info = owner
    for value in returned_values(node):
        if isinstance(value, cst.Name) and value.value in function_parameters(node):
            continue
        found = receiver_instance(where, info, inner, value, depth + 1, target)
        if found is not None:
            typed = _union(typed, _as_seen(index, where, found))
    return typed


def method_returned(index: ModelIndex, classes: tuple[str, ...], name: str) -> tuple[str, ...]:
    """The classes of what a call of method `name` on a module of `classes` hands back, typed in the method's own
    body (`enc = model.get_encoder()` with `return self.enc`); nothing for a class we cannot read."""
    found: list[str] = []
    for ref in classes:
        owner = index.located(ref)
        target = owner[1].inherited_method(name) if owner is not None else None
        if target is None or target.node is None or "return" not in target.text:
            continue
        where, info = owner  # type: ignore[misc]
        inner = flat_of(target)
        for value in returned_values(target.node):
            typed = receiver_instance(where, info, inner, value, 1, target)
            if typed is not None:
                found += _as_seen(index, where, typed).classes
    return tuple(dict.fromkeys(found))


def may_join(cls: ClassInfo, text: str) -> bool:
    """Text pre-filter of a function of `cls` calling a method on a receiver only a join types: a call's value
    (`unwrap(m).sample(`), a chain of two attributes or more from `self` (`self.state.model.sample(`), a local bound
    to a call (`m = self.get_model()`), or a property of the class (`self.raw.sample(`)."""
    if _JOIN_TEXT.search(text):
        return True
    return any(f"self.{name}." in text for name in cls.property_names)


_JOIN_TEXT = re.compile(r"\)\s*\.\s*\w+\s*\(|\bself(?:\.\w+){3,}\s*\(|^[ \t]*\w+[ \t]*=[ \t]*[\w.]+\(", re.MULTILINE)
