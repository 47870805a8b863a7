"""Methods of a held model exposed on another object by a name only known at run time.

`setattr(self, name, getattr(self.ema_model, name))` (directly, or through a local bound to the `getattr`) makes
a bound method of the model an attribute of the wrapper: a caller runs it as `wrapper.sample(x)`, which never
calls the model as a module, so none of its hooks run. Which method is exposed is data (a list of names the user
passes), so whatever it is computes with the model's parameters outside any gather.

`exposed_methods(index)`: one `Exposed` per such `setattr`, in any class (a module or not), when the object
whose attribute is taken is a module: an attribute the class builds, holds or types as one
(`members`, `holds.held_attributes`, `instances.instance_attributes`), or an argument of the method used or
annotated as one (`holds.module_arguments`). A name written as a string literal, and an object that is no
module (`getattr(self.config, name)`), are left out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..program.holds import held_attributes, module_arguments
from ..program.index import ClassInfo, MethodInfo, ModelIndex, memoised
from ..program.members import Kind, facts_of
from ..program.tree import access_path, call_name, code_of, cst
from .flow import flat_of
from .instances import instance_attributes

__all__ = ["Exposed", "exposed_methods"]

# The text without which a method exposes nothing: a `setattr` on `self` and a `getattr`.
_TRIGGER = re.compile(r"setattr(?<!\wsetattr)\(\s*self\s*,")  # `\bsetattr(`, word first (`program/trigger.py`)


@dataclass(frozen=True, slots=True)
class Exposed:
    """`setattr(self, <name>, getattr(<model>, <name>))` in `method` of `cls`."""

    cls: ClassInfo
    method: MethodInfo
    node: cst.Call  # the setattr call
    model: str  # the model's expression as written (`self.ema_model`)


@memoised
def exposed_methods(index: ModelIndex) -> list[Exposed]:
    found: list[Exposed] = []
    if "getattr(" not in index.source or not _TRIGGER.search(index.source):
        return found
    for cls in index.classes.values():
        for method in cls.all_methods():
            if method.owner is not cls or not _TRIGGER.search(method.text) or "getattr(" not in method.text:
                continue
            flat = flat_of(method)
            if flat is None or method.node is None:
                continue
            bound: dict[str, cst.Call] = {}  # `fn = getattr(self.ema_model, name)`
            for node, _ctx in flat.nodes:
                if type(node) is cst.Assign and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
                    if isinstance(node.value, cst.Call) and call_name(node.value) == "getattr":
                        bound[node.targets[0].target.value] = node.value
                    continue
                if type(node) is not cst.Call or call_name(node) != "setattr" or len(node.args) != 3:
                    continue
                owner, name, value = (arg.value for arg in node.args)
                if not (isinstance(owner, cst.Name) and owner.value == "self" and isinstance(name, cst.Name)):
                    continue
                taken = bound.get(value.value) if isinstance(value, cst.Name) else value
                if not (isinstance(taken, cst.Call) and call_name(taken) == "getattr" and len(taken.args) >= 2):
                    continue
                source, key = taken.args[0].value, taken.args[1].value
                if not (isinstance(key, cst.Name) and key.value == name.value):
                    continue  # another name than the one set: not the same method exposed
                if _is_module(index, cls, method, source):
                    found.append(Exposed(cls, method, node, code_of(source)))
    return found


def _is_module(index: ModelIndex, cls: ClassInfo, method: MethodInfo, source: cst.BaseExpression) -> bool:
    """Is `source` a module: `self.<attr>` the class builds, holds or types as one, or a module argument?"""
    path = access_path(source)
    if path is None or "[]" in path.parts:
        return False
    if path.root != "self":
        return not path.parts and path.root in module_arguments(index, method.node)  # type: ignore[arg-type]
    if len(path.parts) != 1:
        return False
    attribute = path.parts[0]
    member = facts_of(cls).members.get(attribute)
    if member is not None and member.kind in (Kind.MODULE, Kind.CONTAINER):
        return True
    if attribute in instance_attributes(index, cls):
        return True
    return attribute in held_attributes(index, cls) or _assigned_module(index, cls, attribute)


def _assigned_module(index: ModelIndex, cls: ClassInfo, attribute: str) -> bool:
    """`self.<attribute>` assigned, in any method, a deep copy of a module attribute or a module argument
    (`self.ema_model = deepcopy(self.model)`, `self.ema_model = ema_model` for `ema_model: Module | None`)."""
    for method in cls.all_methods():
        if f"self.{attribute}" not in method.text or method.node is None:
            continue
        arguments = module_arguments(index, method.node)
        flat = flat_of(method)
        for node, _ctx in flat.nodes if flat is not None else ():
            if type(node) is not cst.Assign or code_of(node.targets[0].target) != f"self.{attribute}":
                continue
            value = node.value
            if isinstance(value, cst.Call) and (call_name(value) or "").rsplit(".", 1)[-1] == "deepcopy" and value.args:
                value = value.args[0].value
            if isinstance(value, cst.Name) and value.value in arguments:
                return True
            copied = access_path(value)
            if copied is not None and copied.root == "self" and len(copied.parts) == 1 and copied.parts[0] != attribute:
                other = facts_of(cls).members.get(copied.parts[0])
                if other is not None and other.kind == Kind.MODULE or copied.parts[0] in held_attributes(index, cls):
                    return True
    return False
