"""Parameters read through a value `instances` types as a module: `v.table` for `v` a loop variable over a
container of typed children, a local or `@property` bound to an annotated child, or an attribute of a plain
class holding one.

`params` reads the paths the members know (`self.embed.weight`, `layer.weight` over a `ModuleList` of known
classes); a child whose class only an annotation, a typed `__init__` argument or a container built from such
attributes tells is typed here by `instances.receiver_instance`, and its parameter is looked up in every class the
value may be built from (`instances.possible_classes`: the subclasses of an annotated base too). A parameter small
enough that ZeRO-3 keeps it gathered is no read, unless its class has no forward (no hook ever fetched it).
Reported in a module's forward and what it calls (the child's hooks have not run), in the methods a training loop
runs on the built module (`generate`, `embed_texts`), and in the methods of a class that is no module (a trainer, a
sampler) that holds the typed model: all read outside the child's forward. In the last two, a child the members
know (`self.clip = CLIP(...)`) is read here too: `params` places its reads in the forward only.
"""

from __future__ import annotations

from functools import partial

from ..program.index import ClassInfo, MethodInfo, ModelIndex, memoised
from ..program.members import UNKNOWN_CLASS, Kind, facts_of, member_of, member_param
from ..program.tree import code_of, cst
from .access import READ, ParamAccess, Scope
from .effects import usage
from .flow import Flat, flat_of
from .instances import Instance, function_arguments, function_flat, instance_attributes, partitioned_param, possible_classes, receiver_instance
from .persistence import is_persistent, persistent_param

__all__ = ["typed_reads"]


@memoised
def typed_reads(index: ModelIndex) -> tuple[ParamAccess, ...]:
    """Reads, in module forwards and in plain holders' methods, of a parameter of a typed child."""
    found: list[ParamAccess] = []
    for cls, method, outside in _candidates(index):
        flat = flat_of(method)
        if flat is not None:
            typing = partial(receiver_instance, index, cls, flat, depth=0, method=method)
            found.extend(_reads(index, cls, method.name, method.snippet, flat, outside, typing, method))
    names = index.param_names | index.related_param_names
    for name in index.skeleton.functions:
        # a function of the file the classes hand a typed child to (`run(self.v, x)` in a forward)
        span = index.skeleton.functions[name]
        if not _mentions(index, index.skeleton.text(span.start, span.end), names):
            continue
        arguments = function_arguments(index, name)
        flat = function_flat(index, name) if arguments else None
        if flat is not None:
            typing = lambda expr, given=arguments: given.get(expr.value) if isinstance(expr, cst.Name) else None  # noqa: E731
            found.extend(_reads(index, None, name, index.parse(span), flat, True, typing, None))
    return tuple(found)


def _candidates(index: ModelIndex):
    names = index.param_names | index.related_param_names
    # a module's entry methods (`fuse`, `merge`) reading a child's weights are ZG109's (`params`, Scope.ENTRY)
    for cls, method in index.methods("forward", None):
        if _mentions(index, method.text, names):
            yield cls, method, False
    for cls in index.classes.values():
        if cls.is_module or not _mentions(index, cls.text, names) or not instance_attributes(index, cls):
            continue
        for method in cls.all_methods():
            if method.owner is cls and method.name != "__init__" and _mentions(index, method.text, names):
                yield cls, method, True


def _mentions(index: ModelIndex, text: str, names: frozenset[str]) -> bool:
    return index.mentions_param(text) or any(f".{name}" in text for name in names)


def _reads(
    index: ModelIndex, cls: ClassInfo | None, where: str, snippet, flat: Flat, outside: bool, typing,
    method: MethodInfo | None,
):
    """`outside`: a method run on the built model outside any forward (an entry method, a plain holder's), where
    even the children the members know are read here, not by `params` (which places those in the forward only)."""
    typed: dict[str, Instance | None] = {}  # by the receiver as written: the typing is flow-insensitive
    for node, ctx in flat.nodes:
        if type(node) is not cst.Attribute or ctx.guarded:
            continue
        path = _split(node)  # `v.fc`, `v.fc.weight`, `v.fc.weight.T`: only the one naming a parameter answers
        if path is None:
            continue
        receiver, parts = path
        if isinstance(receiver, cst.Name) and receiver.value == "self":
            continue  # `self.x`: the class's own
        if not outside and isinstance(receiver, cst.Attribute) and _known_child(cls, receiver.attr.value):  # type: ignore[arg-type]
            continue  # `self.fc.weight` of a child the members know: `params` reads it
        written = code_of(receiver)
        if written not in typed:
            typed[written] = typing(receiver)
        instance = typed[written]
        if instance is None:
            continue
        param = _large_param(index, instance, parts)
        if param is None:
            continue
        use, op = usage(index, flat, node)
        if use != READ:
            continue
        owner = written
        if len(parts) > 1:
            owner += "." + ".".join(parts[:-1])
        first = None
        if isinstance(receiver, cst.Attribute) and len(parts) == 1 and cls is not None and cls.is_module:
            first = facts_of(cls).members.get(receiver.attr.value)  # its constructor call bounds the size
        access = ParamAccess(
            node=node, ctx=ctx, use=use, op=op, owner=owner, param=parts[-1], scope=Scope.FORWARD,
            where=where, snippet=snippet, cls=cls, method=method, owner_classes=instance.classes,
            first=first,
        )
        if not is_persistent(index, access):  # a torch layer's bias, a layer built small: kept gathered
            yield access


def _known_child(cls: ClassInfo, name: str) -> bool:
    if not cls.is_module:
        return False
    member = facts_of(cls).members.get(name)
    return member is not None and member.kind == Kind.MODULE and bool(member.classes) and all(
        c != UNKNOWN_CLASS for c in member.classes
    )


def _split(node: cst.Attribute) -> tuple[cst.BaseExpression, tuple[str, ...]] | None:
    """`v.fc.weight` -> (`v`, ("fc", "weight")); `self.v.table` -> (`self.v`, ("table",)); receivers are a name, an
    attribute of `self`, an element of a container or what a call returns."""
    parts: list[str] = []
    expr: cst.BaseExpression = node
    while isinstance(expr, cst.Attribute):
        parts.append(expr.attr.value)
        value = expr.value
        if isinstance(value, (cst.Subscript, cst.Call)):
            # `self.vs[0].table`: an element of a container; `self.get_v().table`, `unwrap(self.v).table`: what a
            # call hands back (`instances.returned_instance` types it)
            return value, tuple(reversed(parts))
        if isinstance(value, cst.Name):
            if value.value != "self":
                return value, tuple(reversed(parts))
            if len(parts) < 2:
                return None
            return expr, tuple(reversed(parts[:-1]))
        expr = value
    return None


def _large_param(index: ModelIndex, instance: Instance, parts: tuple[str, ...]) -> str | None:
    """`parts` names a parameter (of the instance, or of a child reached by members) that ZeRO-3 does not keep
    gathered, in some class the instance may be built from: the parameter's name, else None."""
    if len(parts) > 3:
        return None
    *children, name = parts
    if not children:
        return name if partitioned_param(index, instance, name) else None
    for owner, ref in possible_classes(index, instance):
        if _child_param(owner, ref, children, name):
            return name
    return None


def _child_param(owner: ModelIndex, ref: str, children: list[str], name: str) -> bool:
    """`v.fc.weight`: a parameter of a child (of a child) the members of `ref` know, above the threshold."""
    classes: tuple[str, ...] = (ref,)
    for child in children:
        member = member_of(owner, classes[0], child) if len(classes) == 1 else None
        if member is None or member.kind != Kind.MODULE or len(member.classes) != 1:
            return False
        classes = member.classes
    return member_param(owner, classes[0], name) is True and not persistent_param(owner, classes[0], name)
