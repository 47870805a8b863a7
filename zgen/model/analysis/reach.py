"""What a call in code outside the model classes may run of the project's own code: the call graph's edges.

A trainer's `if self.is_main: self.evaluate()` skips a model only when `evaluate` reaches one, maybe through
`self.sample_images()`, an evaluator object it holds (`self.evaluator.run(x)`), or a function of another file
(`from .eval import evaluate_model`). This module names the functions and methods such a call may run; the
summary of what each of them reaches (a model, a collective) is `script.scope_reach`, computed once per function
over these edges:

* `self.m(...)`: the method as Python finds it (through bases, in this file or another), and the overrides of
  subclasses in the owner's file and in the checked one (an abstract step filled in by a subclass); where the
  method found is abstract (`raise NotImplementedError`, `@abstractmethod`), also those of subclasses in the other
  files of the package that define a method of that name, which the base's file need not import.
* `obj.m(...)` on a plain object (a class of the project that is no `nn.Module`): `self.evaluator` built in
  `__init__` (or a base's), a local bound to `Evaluator(model)`, an argument annotated with the class, or, kept
  untyped (`self.q = q`), the one plain class of the file or of the package's other files that defines every method
  the class calls on it (`self.q.no_grad(s)`, `self.q.reinforce(loss)`); its `__call__` runs for `self.q(s)`.
* `f(...)`: a function of this file, or one imported from another file of the package.
"""

from __future__ import annotations

import re

from ..program.index import ClassInfo, MethodInfo, ModelIndex, memoised
from ..program.members import facts_of
from ..program.tree import cst, dotted, parameter_names, walk
from .flow import bound_names, targets_of
from .own import package_definers
from .plain import all_bases, plain_instances

__all__ = ["method_targets", "plain_instances", "duck_instances", "function_target", "all_bases", "is_abstract"]


@memoised
def method_targets(index: ModelIndex, cls: ClassInfo, name: str) -> tuple[MethodInfo, ...]:
    """The methods `<instance of cls>.name(...)` may run: the one Python finds from `cls` (its file's bases or
    another file's), and overrides in subclasses of `cls` in its own file and in the checked file."""
    found: list[MethodInfo] = []
    first = cls.inherited_method(name)
    if first is not None:
        found.append(first)
    wheres = [cls.index, index] if cls.index is not index else [cls.index]
    if first is None or is_abstract(first):  # (a mixin's call of a method only its subclasses define: `self.encode(x)`)
        wheres += [w for w in _package_definers(cls.index if first is None else first.index, name) if w not in wheres]
    for where in wheres:
        for other in where.classes.values():
            if other is not cls and name in other.span.methods and _derives(other, cls):
                override = other.method(name)
                if override is not None and override not in found:
                    found.append(override)
    return tuple(found)


def _derives(other: ClassInfo, cls: ClassInfo) -> bool:
    """Is `cls` a base of `other`? (A file read as another's dependency has an index of its own: the checked
    file's class is its namesake there.)"""
    module = cls.index.module
    return any(b is cls or (b.name == cls.name and module and b.index.module == module) for b in all_bases(other))


def is_abstract(method: MethodInfo) -> bool:
    """Is the method a stub a subclass fills in (`raise NotImplementedError`, `@abstractmethod`)?"""
    return "NotImplementedError" in method.text or "abstractmethod" in method.text


def _package_definers(index: ModelIndex, name: str) -> list[ModelIndex]:
    """The other files of the file's top-level package whose text defines a method `name` (`own.package_definers`,
    none for a common verb), indexed: where the subclasses filling in an abstract step live when the base's file
    imports none of them (`BasePlayer.run` calling `self.get_action(obs)`, defined by `PpoPlayer` of
    `players.py`)."""
    found: list[ModelIndex] = []
    for module in package_definers(index, name):
        file = index.project.file(module)  # type: ignore[union-attr]
        if file is not None and file.skeleton is not None:
            found.append(ModelIndex.of(file, index.project))  # type: ignore[arg-type]
    return found


def duck_instances(
    owner: ClassInfo | None, expr: cst.BaseExpression, function: cst.FunctionDef | None = None,
    index: ModelIndex | None = None,
) -> tuple[ClassInfo, ...]:
    """What `plain_instances` cannot tell of `self.q`, or of an unannotated argument of `function` (`def
    evaluate(self, ev, x): ev.run(x)`), told by the methods called on it (`_duck_typed`, `_duck_argument`): only
    ever more runners, never fewer (a class that coincidentally answers does not hide what the object was handed
    for)."""
    name = dotted(expr)
    if name is None:
        return ()
    if "." not in name and function is not None and index is not None:
        return _duck_argument(index, function, owner, name)
    if owner is None or not name.startswith("self.") or name.count(".") != 1:
        return ()
    return _duck_typed(owner.index, owner, name[5:])


@memoised
def _duck_typed(index: ModelIndex, owner: ClassInfo, name: str) -> tuple[ClassInfo, ...]:
    """`self.q` of a plain class (or a base's, in any file) handed it untyped (`def __init__(self, q): self.q = q`,
    `_keeps_argument`), on which the class calls methods (`self.q.no_grad(s)`, `self.q.reinforce(loss)`) that one
    plain class of the file or of the other files of the package defines, all of them, its own class aside: an
    instance of that class (`Approximation`, whose `no_grad` runs the model it wraps), or of one of its subclasses
    there that override some of them (`QNetwork`). Two classes answering that are not one's subclasses tell
    nothing."""
    if owner.is_module:
        return ()
    methods = [method for cls in all_bases(owner) for method in cls.all_methods()]  # bases of other files too
    if not any(_keeps_argument(method, name) for method in methods):
        return ()
    called = re.compile(rf"\bself\.{re.escape(name)}\.(\w+)\(")
    return _answering(owner.index, owner, frozenset(m for method in methods for m in called.findall(method.text)))


@memoised
def _duck_argument(index: ModelIndex, function: cst.FunctionDef, owner: ClassInfo | None, name: str) -> tuple[ClassInfo, ...]:
    """An argument of `function` handed in with no annotation (`def evaluate(self, ev, x)`, `def run_eval(agent,
    env)`), on which the function calls methods (`ev.run(x)`) that one plain class of the file or of the other files
    of the package defines, all of them (`_answering`); so too a local unpacked from an argument
(`_unpacked_locals`). Not an argument the function binds again."""
    declared = {p.name.value: p for p in _all_params(function.params)}
    unannotated = {n for n, p in declared.items() if p.annotation is None} - {"self", "cls"}
    if name not in unannotated and (name in declared or name not in _unpacked_locals(function)):
        return ()
    called: set[str] = set()
    for node in walk(function.body):
        if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr)):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            if any(isinstance(t, cst.Name) and t.value == name for t in targets):
                return ()  # bound again in the function: it may hold anything
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                and isinstance(node.func.value, cst.Name) and node.func.value.value == name:
            called.add(node.func.attr.value)
    return _answering(index, owner, frozenset(called))


def _all_params(params: cst.Parameters) -> tuple[cst.Param, ...]:
    return (*params.posonly_params, *params.params, *params.kwonly_params)


def _unpacked_locals(function: cst.FunctionDef) -> frozenset[str]:
    """The locals the function binds once, by unpacking one of its arguments (`model, loss, evaluator =
    training_modules`). An element of a bundle is untyped whatever the bundle's annotation says (a namedtuple of
    untyped fields): the methods called on it tell what it is. (One walk per function, kept while it lives.)"""
    kept = _UNPACKED.get(id(function))
    if kept is not None and kept[0] is function:
        return kept[1]
    given = parameter_names(function)
    unpacked: set[str] = set()
    bound: dict[str, int] = {}
    for node in walk(function.body):
        targets, value = targets_of(node)
        for target in targets:
            names = list(bound_names(target))
            for name in names:
                bound[name] = bound.get(name, 0) + 1
            if isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, cst.Name) and value.value in given:
                unpacked.update(names)
    found = frozenset(n for n in unpacked if bound.get(n) == 1)
    if len(_UNPACKED) > 4096:
        _UNPACKED.clear()
    _UNPACKED[id(function)] = (function, found)
    return found


_UNPACKED: dict[int, tuple[cst.FunctionDef, frozenset[str]]] = {}


def _answering(index: ModelIndex, owner: ClassInfo | None, called: frozenset[str]) -> tuple[ClassInfo, ...]:
    """The plain classes of the file, or of the other files of the package defining one of the methods, that answer
    every method in `called` (not a common verb, `_NOT_TELLING`) but one of a model the class keeps (`ev.model(x)`,
    a call of its attribute), `owner` aside, when one of them is a base of all the others."""
    names = called - _NOT_TELLING
    if not names:
        return ()
    indexes = [index]
    for method in sorted(names):
        indexes += [i for i in _package_definers(index, method) if i not in indexes]
    found = [
        cls for where in indexes for cls in where.classes.values()
        if cls is not owner and not cls.is_module and _answers(cls, names) and not _hands_on(cls, names)
    ]
    root = next((cls for cls in found if all(cls in all_bases(other) for other in found)), None)
    return tuple(found) if root is not None else ()


def _hands_on(cls: ClassInfo, names: frozenset[str]) -> bool:
    """Does `cls` answer each of `names` by calling the same method on an object it keeps (`def no_grad(self, s):
    ... self.q.no_grad(s)`)? Such a wrapper, a sibling of the caller (`ParallelGreedyPolicy` beside
    `GreedyPolicy`), is no endpoint: what runs is whatever it wraps, the question asked again, so it tells
    nothing of what the object is."""
    for name in names:
        method = cls.inherited_method(name)
        if method is None or not re.search(rf"\bself\.\w+\.{re.escape(name)}\(", method.text):
            return False
    return True


def _answers(cls: ClassInfo, names: frozenset[str]) -> bool:
    """Does `cls` define each of `names` as a method (its own or a base's), or keep it as an attribute (`self.model
    = model`: `ev.model(x)` calls what it holds), one of them a method?"""
    methods = {m for m in names if cls.inherited_method(m) is not None}
    if not methods:
        return False
    kept = names - methods
    return not kept or all(any(facts_of(c).members.get(m) is not None for c in all_bases(cls)) for m in kept)


def _keeps_argument(method: MethodInfo, name: str) -> bool:
    """Does `method` keep one of its arguments as `self.name` (`def __init__(self, q): self.q = q`)? An object it
    builds itself (`self.scorer = Scorer(...)`) is `plain_instances`' to tell, not the methods called on it."""
    node = method.node
    if node is None or f"self.{name}" not in method.text:
        return False
    kept = re.findall(rf"(?m)^\s*self\.{re.escape(name)}\s*=\s*(\w+)\s*$", method.text)
    return any(param.name.value in kept for param in node.params.params + node.params.kwonly_params)


# Methods every kind of object has or that containers, files and tensors share: no class is told by them.
_NOT_TELLING = frozenset(
    {"to", "cpu", "cuda", "get", "items", "keys", "values", "update", "append", "extend", "pop", "copy", "clear",
     "close", "reset", "step", "write", "read", "save", "load", "state_dict", "load_state_dict", "train", "eval",
     "format", "item", "numpy", "detach", "size", "mean", "sum"}
)  # fmt: skip


def function_target(index: ModelIndex, name: str) -> MethodInfo | None:
    """The module-level function a call by name runs: of this file, or imported from another file of the program."""
    info = index.function_info(name) if "." not in name else None
    if info is not None:
        return info
    if name.partition(".")[0] not in index.imports:  # (`validate.run` of `from . import val as validate`)
        return None
    found = index.external_function(index.qualify(name))
    return found[1] if found is not None else None
