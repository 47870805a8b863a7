"""Model state moved between two built submodules of a module: `self.target.load_state_dict(self.online.state_dict())`.

A module's method that copies one child's state into another (a target or agent network refreshed from the
online one every few steps) runs on the built model: in a training-loop method, and in `forward` and what it
calls too, because ZeRO-3's hooks gather a module's own parameters only while that module's forward runs, never
a child's that is not being called. Both children are partitioned there: the state read holds placeholders and
the load copies them into placeholders. The constructor's copies are `built`'s (ZG103); guarded code and private
helpers called only inside a gather are safe.
"""

from __future__ import annotations

import re

from ..program.holds import config_like
from ..program.index import MethodInfo, ModelIndex, memoised
from ..program.members import Kind, Member, facts_of
from ..program.tree import cst
from .flow import flat_of, runs_gathered

__all__ = ["child_state_copies"]

# Text without which a class copies no state between its children (`\bself`, word first: `program/trigger.py`).
_COPY_TEXT = re.compile(r"self(?<!\wself)\.\w+\.load_state_dict\(\s*self\.\w+\.state_dict\(\)")


@memoised
def child_state_copies(index: ModelIndex) -> list[tuple[MethodInfo, cst.Call, str, str]]:
    """(method, the `state_dict()` call, target child, source child) of each copy of one child's state into another
    in a method of a module class run on the built model, outside a gather."""
    found: list[tuple[MethodInfo, cst.Call, str, str]] = []
    if index.other_framework or not _COPY_TEXT.search(index.source):
        return found
    for cls in index.module_classes():
        if not _COPY_TEXT.search(cls.text):
            continue
        init = {id(m) for m in cls.init_methods}
        members = facts_of(cls).members
        for method in cls.all_methods():
            if id(method) in init or method.owner is not cls or not _COPY_TEXT.search(method.text):
                continue
            if runs_gathered(cls, method):
                continue
            flat = flat_of(method)
            for node, ctx in flat.nodes if flat is not None else ():
                if type(node) is not cst.Call or ctx.guarded:
                    continue
                copy = _state_copy(node)
                if copy is None:
                    continue
                read, target, source = copy
                if _not_a_module(members.get(source), source, Kind.VALUE) or _not_a_module(members.get(target), target):
                    continue  # (the target may be a copy `__init__` made, `copy.deepcopy(self.model)`)
                found.append((method, read, target, source))
    return found


def _state_copy(call: cst.Call) -> tuple[cst.Call, str, str] | None:
    """`self.a.load_state_dict(self.b.state_dict())`: the read call and the two children's names."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value != "load_state_dict" or not call.args:
        return None
    target = _child(func.value)
    read = call.args[0].value
    if target is None or not isinstance(read, cst.Call) or read.args or not isinstance(read.func, cst.Attribute):
        return None
    if read.func.attr.value != "state_dict":
        return None
    source = _child(read.func.value)
    return (read, target, source) if source is not None and source != target else None


def _child(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        return expr.attr.value
    return None


def _not_a_module(member: Member | None, name: str, lowest: Kind = Kind.UNKNOWN) -> bool:
    """A parameter or a buffer by how `__init__` made it (a plain value too, for `lowest=Kind.VALUE`: the source
    of the copy must be a module `__init__` stored or was handed), or a config by its name."""
    if config_like(name):
        return True
    if member is None:
        return False
    return member.kind in (Kind.PARAM, Kind.BUFFER) or (lowest is Kind.VALUE and member.kind is Kind.VALUE)
