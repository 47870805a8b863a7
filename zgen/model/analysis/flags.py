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

The callback's own file is checked too (`stop_signals`): a method of a class that is no module, handed the object
that runs the loop (an engine, a trainer, the loop's state mapping), that sets a flag on it (`engine.should_terminate =
True`, `state[pkg.STOP_TRAINING] = True`) or calls its method that sets one (`engine.terminate()`), under a test on
what it was handed (the step's output, a logged metric, a patience counter fed by one; in an `except` of a check
of them) or on this host's clock, where a loop of the package (this file or one it imports, two imports deep) leaves
on that flag; or that raises an exception class of the package (`raise StopTraining()`) there, which a `try` of the
package around a loop (or in one) catches without raising again. The loop's file need not import the callback, so
the finding stands at the setter.
"""

from __future__ import annotations

import builtins
import os
import re
from dataclasses import dataclass

from ..program import known
from ..program.index import MethodInfo, ModelIndex, memoised
from ..program.project import runs_scripts
from ..program.tree import children, code_of, cst, parameter_names, walk
from .flow import Flat, bound_names, flat_of, targets_of
from .taint import agreeing

__all__ = ["flag_source", "stop_signals", "StopSignal"]

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


@dataclass(frozen=True, slots=True)
class StopSignal:
    """A stop flag set on this rank's values, in the file that sets it."""

    method: MethodInfo  # the callback's method
    node: cst.CSTNode  # the assignment or the call setting the flag
    test: str  # the per-rank test it is set under, as text
    loop: str  # `Class.method` of the loop leaving on the flag, as text


# A method that may set a flag on what it was handed: an attribute or item set to a true value, or a call of a
# method of a name (`engine.terminate()`); decided on the parse.
_SIGNAL_TEXT = re.compile(r"(?:\]|\w)\s*=\s*(?:True|1)\b|(?<![\w.])(?!self\.)\w+\.\w+\(")


@memoised
def stop_signals(index: ModelIndex) -> tuple[StopSignal, ...]:
    """The stop flags methods of this file's classes that are no modules set on an object they were handed, under a
    test on its values or on this host's clock, where a loop of the package leaves on the flag."""
    found = []
    for cls in index.classes.values():
        if cls.is_module:
            continue  # (a layer is no callback of a training loop)
        for method in cls.all_methods():
            text = method.text
            if "if " not in text and "except" not in text or not _SIGNAL_TEXT.search(text) and "raise " not in text:
                continue
            flat = flat_of(method)
            if flat is None or not isinstance(flat.nodes[0][0], cst.FunctionDef):
                continue
            per_rank: dict[str | None, set[str] | None] = {}  # by the argument the flag is set on
            for node, ctx in flat.nodes:
                if type(node) is cst.Raise and (stopped := _raised_stop(index, node)) is not None:
                    if None not in per_rank:
                        per_rank[None] = _per_rank_names(flat, index)
                    test = _per_rank_test(flat, node, ctx, per_rank[None]) if per_rank[None] else None
                    if test is not None:
                        found.append(StopSignal(method, node, test, stopped))
                    continue
                signal = _signal(index, node, flat)
                if signal is None:
                    continue
                holder, flag = signal
                if holder not in per_rank:
                    per_rank[holder] = _per_rank_names(flat, index, holder)
                if not per_rank[holder]:
                    continue
                test = _per_rank_test(flat, node, ctx, per_rank[holder])
                if test is None:
                    continue
                loop = _leaving_loop(index, flag)
                if loop is not None:
                    found.append(StopSignal(method, node, test, loop))
    return tuple(found)


def _signal(index: ModelIndex, node: cst.CSTNode, flat: Flat) -> tuple[str, tuple[str, str]] | None:
    """The argument of the method and ("attr", name) or ("key", name) of the flag `node` sets on it: `engine.stop =
    True`, `state[KEY] = True`, or a call of the argument's method that sets one of its own attributes
    (`engine.terminate()`: `("engine", ("attr", "should_terminate"))`)."""
    root = flat.nodes[0][0]
    params = parameter_names(root) - {"self", "cls"}
    if type(node) is cst.Assign and _truthy(node.value):
        for target in (t.target for t in node.targets):
            if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value in params:
                return target.value.value, ("attr", target.attr.value)
            if (
                isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name)
                and target.value.value in params and len(target.slice) == 1
                and isinstance(target.slice[0].slice, cst.Index)
            ):
                return target.value.value, ("key", _key_name(target.slice[0].slice.value))
        return None
    if (
        type(node) is cst.Expr and isinstance(node.value, cst.Call) and isinstance(node.value.func, cst.Attribute)
        and isinstance(node.value.func.value, cst.Name) and node.value.func.value.value in params
    ):
        attr = _setting_method(index, node.value.func.attr.value)
        return (node.value.func.value.value, ("attr", attr)) if attr is not None else None
    return None


def _raised_stop(index: ModelIndex, node: cst.Raise) -> str | None:
    """`Class.method` of a loop of the package that an exception class `node` raises (`raise StopTraining()`, one
    of the package: not a builtin) ends: a `try` around the loop, or in it, whose handler of that class neither
    raises again nor carries on."""
    exc = node.exc.func if isinstance(node.exc, cst.Call) else node.exc
    if not isinstance(exc, (cst.Name, cst.Attribute)):
        return None
    name = exc.value if isinstance(exc, cst.Name) else exc.attr.value
    if hasattr(builtins, name):
        return None  # (`raise ValueError(...)`: a failure the caller reports, no stop of a loop)
    return _catching_loop(index, name)


@memoised
def _catching_loop(index: ModelIndex, name: str) -> str | None:
    """(Of the other files only: in this one the handler around the loop is reported, `divergence`'s CAUGHT.)"""
    for other in _files(index, name, follow=True)[1:]:
        for cls in other.classes.values():
            for method in cls.all_methods():
                if "except" not in method.text or name not in method.text or (flat := flat_of(method)) is None:
                    continue
                for node, ctx in flat.nodes:
                    if type(node) is not cst.Try or not any(_handles(h, name) for h in node.handlers):
                        continue
                    loops = [n for n in walk(node.body) if type(n) in (cst.For, cst.While) and _calls(n.body)]
                    if loops or (ctx.loops and _calls(ctx.loops[-1].body)):
                        return f"{cls.name}.{method.name}"
    return None


def _handles(handler: cst.ExceptHandler, name: str) -> bool:
    """Does `handler` catch the class `name` (alone or in a tuple) without raising again?"""
    kind = handler.type
    kinds = [e.value for e in kind.elements] if isinstance(kind, cst.Tuple) else [kind]
    named = any(
        (isinstance(k, cst.Name) and k.value == name) or (isinstance(k, cst.Attribute) and k.attr.value == name)
        for k in kinds
    )
    return named and not any(type(n) is cst.Raise for n in walk(handler.body))


def _key_name(key: cst.BaseExpression) -> str:
    """`pkg.STOP_TRAINING` -> `STOP_TRAINING`, `"stop"` -> `"stop"` (a constant read through any module path)."""
    return key.attr.value if isinstance(key, cst.Attribute) else code_of(key)


def _truthy(value: cst.BaseExpression) -> bool:
    """`True`, `1`, or a choice one of whose values is (`"skip" if skip else True`)."""
    if isinstance(value, cst.IfExp):
        return _truthy(value.body) or _truthy(value.orelse)
    return _true(value)


def _per_rank_test(flat: Flat, node: cst.CSTNode, ctx, per_rank: set[str]) -> str | None:
    """The test on `per_rank` values that `node` runs under (text): an enclosing test, or the `try` body an enclosing
    `except` handles the failure of (`try: check(output) except RuntimeError: engine.terminate()`)."""
    for test in reversed(ctx.conds):
        if _mentions(test, per_rank) and not _presence(test):
            return f"`{code_of(test)}`"
    current = flat.parent.get(id(node))
    while current is not None:
        if type(current) is cst.ExceptHandler:
            handled = flat.parent.get(id(current))
            if type(handled) is cst.Try and _mentions(handled.body, per_rank):
                return f"a failure in `{code_of(handled.body.body[0])}`" if handled.body.body else None
            break
        current = flat.parent.get(id(current))
    return None


def _presence(test: cst.BaseExpression) -> bool:
    """`value is not None`: whether a value was given (the caller's convention), not what it is."""
    if isinstance(test, cst.UnaryOperation):
        return _presence(test.expression)
    return (
        isinstance(test, cst.Comparison) and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, (cst.Is, cst.IsNot))
        and isinstance(test.comparisons[0].comparator, cst.Name) and test.comparisons[0].comparator.value == "None"
    )


@memoised
def _setting_method(index: ModelIndex, name: str) -> str | None:
    """The attribute a method `name` of a class of this file or the package files it imports sets to a true value
    on its own object (`def terminate(self): self.should_terminate = True`), if any."""
    pattern = re.compile(rf"def\s+{re.escape(name)}\s*\(\s*self\b")
    for other in _files(index, f"def {name}", follow=True):
        if not pattern.search(other.source):
            continue
        for cls in other.classes.values():
            method = cls.method(name)
            if method is None or (flat := flat_of(method)) is None:
                continue
            for node, _ctx in flat.nodes:
                if type(node) is cst.Assign and _truthy(node.value):
                    for target in (t.target for t in node.targets):
                        if (
                            isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)
                            and target.value.value == "self"
                        ):
                            return target.attr.value
    return None


@memoised
def _leaving_loop(index: ModelIndex, flag: tuple[str, str]) -> str | None:
    """`Class.method` of a loop of this file or the package files it imports that leaves on `flag` (a `while` testing
    it, or a `break`, `return` or `raise` under a test of it inside a loop) and calls something in its body."""
    kind, name = flag
    for other in _files(index, name, follow=True):
        for cls in other.classes.values():
            for method in cls.all_methods():
                if name not in method.text or (flat := flat_of(method)) is None:
                    continue
                for node, ctx in flat.nodes:
                    if type(node) is cst.While and _tests_flag(node.test, kind, name) and _calls(node.body):
                        return f"{cls.name}.{method.name}"
                    if (
                        type(node) is cst.If and ctx.loops and _tests_flag(node.test, kind, name)
                        and _leaves(node.body) and _calls(ctx.loops[-1].body)
                    ):
                        return f"{cls.name}.{method.name}"
    return None


def _tests_flag(test: cst.BaseExpression, kind: str, name: str) -> bool:
    for node in walk(test):
        if kind == "attr" and type(node) is cst.Attribute and node.attr.value == name:
            return True
        if (
            kind == "key" and type(node) is cst.Subscript and len(node.slice) == 1
            and isinstance(node.slice[0].slice, cst.Index) and _key_name(node.slice[0].slice.value) == name
        ):
            return True
    return False


def _leaves(body: cst.BaseSuite) -> bool:
    return any(type(node) in (cst.Break, cst.Return, cst.Raise) for node in walk(body))


_NOT_RUNNING = frozenset({"print", "len", "range", "isinstance", "str", "int", "float"})


def _calls(body: cst.BaseSuite) -> bool:
    """Does the loop body call something (a step, a handler, a model) beyond builtins?"""
    for node in walk(body):
        if type(node) is cst.Call:
            func = node.func
            if not (isinstance(func, cst.Name) and func.value in _NOT_RUNNING):
                return True
    return False


def _files(index: ModelIndex, attr: str, follow: bool = False) -> list[ModelIndex]:
    """This file and the files of its own project it imports, and those they import (a trainer's base class in one
    file, its callbacks in another), under the directory of its top package (of a script's folder with no
    `__init__.py`: the project's home above it, `project.runs_scripts`); at most `_MAX_FILES`. With `follow`,
    through files that do not mention `attr` too (a package's `__init__.py` re-exporting its trainer), of which only
    those mentioning it are returned."""
    found = [index]
    project = index.project
    if project is None or not index.imports:
        return found
    top = os.path.dirname(os.path.abspath(index.path))
    if not os.path.isfile(os.path.join(top, "__init__.py")) and runs_scripts(os.path.dirname(top)):
        top = os.path.dirname(top)  # a script's folder with no `__init__.py` (`exp/`): its siblings are its project's
    while os.path.isfile(os.path.join(top, "__init__.py")) and os.path.dirname(top) != top:
        top = os.path.dirname(top)
    seen = [index]
    frontier = [index]
    for _depth in range(2):
        following = []
        for current in frontier:
            for other in _imported(current, project, top, attr, follow):
                if other in seen or len(seen) >= (_MAX_FOLLOWED if follow else _MAX_FILES):
                    continue
                seen.append(other)
                following.append(other)
                if attr in other.source:
                    found.append(other)
        frontier = following
    return found


_MAX_FILES = 12
_MAX_FOLLOWED = 48


def _imported(index: ModelIndex, project, top: str, attr: str, follow: bool = False) -> list[ModelIndex]:
    """The files under `top` that `index` imports from and that mention `attr` (only those are indexed; with
    `follow`, also the others, to reach the files they import: a package's `__init__.py` re-exporting its trainer)."""
    out = []
    targets = set(index.imports.values())
    if follow:
        targets.update(index.skeleton.stars)  # `from .trial import *`: what a package's `__init__.py` re-exports
    for target in sorted(targets):
        target = index.absolute(target) if target.startswith(".") else target
        for name in (target, target.rsplit(".", 1)[0]):
            other = project.file(name)
            if other is None:
                continue
            if other is not index.file and other.path != index.path and os.path.abspath(other.path).startswith(top + os.sep) and (
                follow or attr in other.source
            ):
                out.append(ModelIndex.of(other, project))
            break
    return out


def _set_on_own_values(flat: Flat, attr: str) -> str | None:
    """`target = True` (the assignment's text) when the method sets `attr` under a test on a value it was handed."""
    per_rank = _per_rank_names(flat)
    if per_rank is None:
        return None
    for node, ctx in flat.nodes:
        if type(node) is not cst.Assign or not _true(node.value):
            continue
        if not any(isinstance(t.target, cst.Attribute) and t.target.attr.value == attr for t in node.targets):
            continue
        if any(_mentions(test, per_rank) for test in ctx.conds):
            return code_of(node, limit=120)
    return None


def _per_rank_names(flat: Flat, index: ModelIndex | None = None, source: str | None = None) -> set[str] | None:
    """The locals and `self.x` attributes (as text) the function computes from a value it was handed (not a counter,
    not once a collective agreed on it), or, given `index`, from this host's clock (`time.time() - self.start`);
    None when it was handed nothing. Given `source`, only that argument counts as handed (the engine or state a loop
    hands its callback: what the loop put in it, not the callback's settings, `diverge_th`)."""
    root = flat.nodes[0][0] if flat.nodes else None
    if not isinstance(root, cst.FunctionDef):
        return None
    params = root.params
    handed = {
        p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)
        if p.name.value not in ("self", "cls") and not _COUNTER.match(p.name.value)
        and (source is None or p.name.value == source)
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
            if not (
                _mentions(value, derived - agreed) or any(_mentions(t, derived - agreed) for t in ctx.conds)
                or (index is not None and _reads_clock(index, value))
            ):
                continue
            for target in targets:
                derived.update(bound_names(target))
                if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name):
                    derived.add(code_of(target))
    return derived - agreed


def _reads_clock(index: ModelIndex, expr: cst.CSTNode) -> bool:
    """Does `expr` call this host's clock (`time.time()`, `perf_counter()`)?"""
    return any(type(node) is cst.Call and index.qualified_call(node) in known.CLOCK_FUNCS for node in walk(expr))


def _mentions(expr: cst.CSTNode, names: set[str]) -> bool:
    """Does `expr` read one of `names` (a local, or `self.x` text), not through a counter of another object
    (`state.global_step`)?"""
    stack = [expr]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is cst.Name and node.value in names:
            return True
        if kind is cst.Attribute:
            own = isinstance(node.value, cst.Name) and node.value.value == "self"
            if _COUNTER.match(node.attr.value) and not own:
                continue  # (`self._stopping_steps`, moved only under a test on a handed value, is a patience count)
            if isinstance(node.value, cst.Name) and code_of(node) in names:
                return True
        stack.extend(children(node))
    return False


def _true(value: cst.BaseExpression) -> bool:
    return (isinstance(value, cst.Name) and value.value == "True") or (
        isinstance(value, cst.Integer) and value.value == "1"
    )
