"""Stop flags: an attribute a loop tests to leave (`if self._stop: break`), set elsewhere on a rank's own values.

Early stopping, divergence guards and patience counters often live apart from the loop they end: a callback or a
checker method compares a metric it was handed (a validation loss, a log entry, a step's output) with a best value
or a threshold and sets a flag on the object that runs the loop (`self.trainer.should_stop = True`). The loop only
tests the flag. When the metric is this rank's own (not all-reduced or broadcast first), ranks set the flag at
different epochs, the others keep running the model, and their parameter all-gathers hang.

A setter counts when the flag is assigned a true value under a test on a value the method was handed, followed
through its locals and the attributes it assigns from them; counters handed in (`epoch`, `step`, `state.global_step`)
are the same on every rank and do not count. Setters are looked for in the checked file and in the files of its
own package it imports (where callbacks of a trainer live), by a text trigger before any parse.
"""

from __future__ import annotations

import os
import re

from ..program.index import ModelIndex, memoised
from ..program.tree import children, code_of, cst, walk
from .flow import Flat, bound_names, flat_of, targets_of
from .taint import agreeing

__all__ = ["flag_source"]

# Names of counters: an epoch, a step, an iteration, a batch index. The same on every rank of one run.
_COUNTER = re.compile(r"^_*(?:\w+_)?(?:epoch|step|iter|iteration|it|idx|index|count|counter|num|n|i|batch_idx)s?$")


def flag_source(index: ModelIndex, test: cst.CSTNode) -> str | None:
    """A setter of a flag `test` reads (`self._stop`, `trainer.should_stop`) that sets it on this rank's values, as
    text for a message, if any."""
    flag = test.expression if isinstance(test, cst.UnaryOperation) else test  # `not self.should_stop`
    if not isinstance(flag, cst.Attribute) or not isinstance(flag.value, cst.Name) or flag.attr.value == "training":
        return None  # (a bare flag on an object: settings paths and expressions are not looked up)
    return _setters(index, flag.attr.value)


@memoised
def _setters(index: ModelIndex, attr: str) -> str | None:
    """`Class.method(): target = True` for the first method of this file or its imported package files that sets
    the attribute `attr` to a true value under a test on values it was handed."""
    pattern = re.compile(rf"\.{re.escape(attr)}\s*=\s*(?:True|1)\b")
    for other in _files(index, attr):
        if not pattern.search(other.source):
            continue
        for cls in other.classes.values():
            if not pattern.search(cls.text):
                continue
            for method in cls.all_methods():
                if not pattern.search(method.text):
                    continue
                flat = flat_of(method)
                found = _set_on_own_values(flat, attr) if flat is not None else None
                if found is not None:
                    return f"{cls.name}.{method.name}(): {found}"
    return None


def _files(index: ModelIndex, attr: str) -> list[ModelIndex]:
    """This file and the files of its own project it imports, and those they import (a trainer's base class in one
    file, its callbacks in another), under the directory of its top package; at most `_MAX_FILES`."""
    found = [index]
    project = index.project
    if project is None or not index.imports:
        return found
    top = os.path.dirname(os.path.abspath(index.path))
    while os.path.isfile(os.path.join(top, "__init__.py")) and os.path.dirname(top) != top:
        top = os.path.dirname(top)
    frontier = [index]
    for _depth in range(2):
        following = []
        for current in frontier:
            for other in _imported(current, project, top, attr):
                if other not in found and len(found) < _MAX_FILES:
                    found.append(other)
                    following.append(other)
        frontier = following
    return found


_MAX_FILES = 12


def _imported(index: ModelIndex, project, top: str, attr: str) -> list[ModelIndex]:
    """The files under `top` that `index` imports from and that mention `attr` (only those are indexed)."""
    out = []
    for target in sorted(set(index.imports.values())):
        target = index.absolute(target) if target.startswith(".") else target
        for name in (target, target.rsplit(".", 1)[0]):
            other = project.file(name)
            if other is None:
                continue
            if other is not index.file and os.path.abspath(other.path).startswith(top + os.sep) and attr in other.source:
                out.append(ModelIndex.of(other, project))
            break
    return out


def _set_on_own_values(flat: Flat, attr: str) -> str | None:
    """`target = True` (the assignment's text) when the method sets `attr` under a test on a value it was handed."""
    root = flat.nodes[0][0] if flat.nodes else None
    if not isinstance(root, cst.FunctionDef):
        return None
    params = root.params
    handed = {
        p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)
        if p.name.value not in ("self", "cls") and not _COUNTER.match(p.name.value)
    }
    if not handed:
        return None
    derived: set[str] = set(handed)  # locals and `self.x` attributes computed from a handed value
    agreed: set[str] = set()  # names a collective made the same on every rank
    for node, _ctx in flat.nodes:
        if type(node) is cst.Call and agreeing(node) and node.args and isinstance(node.args[0].value, cst.Name):
            agreed.add(node.args[0].value.value)
    for _ in range(2):
        for node, ctx in flat.nodes:
            targets, value = targets_of(node)
            if value is None:
                continue
            if not (_mentions(value, derived - agreed) or any(_mentions(t, derived - agreed) for t in ctx.conds)):
                continue
            for target in targets:
                derived.update(bound_names(target))
                if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name):
                    derived.add(code_of(target))
    for node, ctx in flat.nodes:
        if type(node) is not cst.Assign or not _true(node.value):
            continue
        if not any(isinstance(t.target, cst.Attribute) and t.target.attr.value == attr for t in node.targets):
            continue
        if any(_mentions(test, derived - agreed) for test in ctx.conds):
            return code_of(node, limit=120)
    return None


def _mentions(expr: cst.CSTNode, names: set[str]) -> bool:
    """Does `expr` read one of `names` (a local, or `self.x` text), not through a counter (`state.global_step`)?"""
    stack = [expr]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is cst.Name and node.value in names:
            return True
        if kind is cst.Attribute:
            if _COUNTER.match(node.attr.value):
                continue
            if isinstance(node.value, cst.Name) and code_of(node) in names:
                return True
        stack.extend(children(node))
    return False


def _true(value: cst.BaseExpression) -> bool:
    return (isinstance(value, cst.Name) and value.value == "True") or (
        isinstance(value, cst.Integer) and value.value == "1"
    )
