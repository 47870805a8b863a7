"""Functions that take a built model or build modules themselves, outside any module class.

`def initialize(model, init): for p in model.parameters(): nn.init.xavier_uniform_(p.data)` and
`m = nn.Sequential(...); m.np = sum(x.numel() for x in m.parameters())` touch a module whose
constructor has returned: under `deepspeed.zero.Init` its parameters are partitioned already,
so writes go to placeholders and sizes read 0. A function's argument counts as a built model
when the function walks it like one (`.parameters()`, `.modules()`, `.named_parameters()`,
`.children()`); a local counts from its assignment of a module construction on.

The places are the script scopes of `script.py` (top-level functions, methods of non-module
classes), so a model wrapped by `deepspeed.initialize` there is left to the script rules.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..program.index import ModelIndex, memoised
from ..program.members import Kind, classify, has_params
from ..program.tree import access_path, code_of, cst
from ..program.trigger import Trigger
from .effects import usage
from .flow import loop_items
from .script import ScriptScope, script_scopes

__all__ = ["BuiltAccess", "built_model_accesses", "where"]

# A function that walks a module's parameters or submodules.
_TRIGGER = Trigger(
    "parameters(", "modules(", "children(",
    pattern=r"\.(?:modules|parameters|named_parameters|named_modules|children|named_children)\(",
)
_PARAM_WALKS = frozenset({"parameters", "named_parameters"})
_MODULE_WALKS = frozenset({"modules", "named_modules", "children", "named_children"})


@dataclass(frozen=True, slots=True)
class BuiltAccess:
    """A parameter of a built module reached in script code, and how it is used."""

    scope: ScriptScope
    node: cst.CSTNode
    use: str  # params.READ, SIZE, WRITE, INIT, ...
    detail: str
    holder: str  # the name holding the built module (`model`, `m_`)
    passed_in: bool  # the function's argument (built by the caller), not a module it built itself


@memoised
def built_model_accesses(index: ModelIndex) -> list[BuiltAccess]:
    """Parameter accesses of built modules in the functions of this file (computed once per file)."""
    return [a for scope in script_scopes(index, _TRIGGER) for a in _accesses(index, scope)]


def _held(index: ModelIndex, scope: ScriptScope) -> dict[str, tuple[int, bool]]:
    """Names that hold a built module -> (flat position from which they do, passed in?).

    A function passed around as a value (`model.apply(init_fn)`, `named_apply(partial(_init, ...), self)`)
    is a callback: what it is given depends on the walk that calls it, judged at that call instead.
    Modules a function builds are partitioned only when it runs during construction: when a
    module's `__init__` in this file calls it (`self.model = parse_model(cfg)`).
    """
    held: dict[str, tuple[int, bool]] = {}
    node = scope.node
    if isinstance(node, cst.FunctionDef) and _callback(index, node.name.value):
        return held
    if isinstance(node, cst.FunctionDef):
        params = node.params
        names = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
        names -= {"self", "cls"}
        for inner, _ctx in scope.flat.nodes:
            if type(inner) is cst.Call and isinstance(inner.func, cst.Attribute):
                owner = inner.func.value
                walk = inner.func.attr.value
                if isinstance(owner, cst.Name) and owner.value in names and walk in _PARAM_WALKS | _MODULE_WALKS:
                    if owner.value not in scope.wrapped:  # a script that wraps it later built it plain
                        held.setdefault(owner.value, (-1, True))
    if not isinstance(node, cst.FunctionDef) or not _construction_helper(index, node.name.value):
        return held
    for inner, _ctx in scope.flat.nodes:
        if type(inner) is cst.Assign and len(inner.targets) == 1 and isinstance(inner.targets[0].target, cst.Name):
            name = inner.targets[0].target.value
            if name in held or name in scope.wrapped:
                continue
            kind, classes = classify(index, inner.value)
            if kind in (Kind.MODULE, Kind.CONTAINER) and any(has_params(index, c) is not False for c in classes or ("",)):
                held[name] = (scope.flat.position[id(inner)], False)
    return held


def _callback(index: ModelIndex, name: str) -> bool:
    """Is the function `name` referenced as a value somewhere in its file (not only called or defined)?"""
    return re.search(r"(?<![\w.])(?<!def )" + re.escape(name) + r"\b(?!\s*\()", index.source) is not None


def _construction_helper(index: ModelIndex, name: str) -> bool:
    """Does the `__init__` of a module class of this file (or a helper it calls) call the function `name`?"""
    call = re.compile(r"(?<![\w.])" + re.escape(name) + r"\s*\(")
    return any(call.search(method.text) for cls in index.module_classes() for method in cls.init_methods)


def _accesses(index: ModelIndex, scope: ScriptScope) -> Iterator[BuiltAccess]:
    held = _held(index, scope)
    if not held:
        return
    flat = scope.flat
    params: dict[str, str] = {}  # for p in model.parameters(): p -> model
    modules: dict[str, str] = {}  # for m in model.modules(): m -> model

    def holder(name: str, at: cst.CSTNode) -> str | None:
        start = held.get(name)
        if start is not None and flat.position.get(id(at), -1) > start[0]:
            return name
        return modules.get(name)

    # `model._modules[name] = Linear(...)`: a module the function puts in place itself, after construction.
    replaced = {code_of(t.target, limit=1000) for n, _ in flat.nodes if type(n) is cst.Assign for t in n.targets}
    for node, ctx in flat.nodes:
        kind = type(node)
        if ctx.guarded:
            continue
        if kind is cst.For or kind is cst.CompFor:
            for target, it in loop_items(node.target, node.iter):
                if isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) and isinstance(target, cst.Name):
                    path = access_path(it.func.value)
                    owner = holder(path.root, node) if path is not None and not path.parts else None
                    if owner is not None and it.func.attr.value in _PARAM_WALKS:
                        params[target.value] = owner
                    elif owner is not None and it.func.attr.value in _MODULE_WALKS:
                        modules[target.value] = owner
            continue
        if kind is cst.Name and node.value in params:
            if isinstance(flat.parent.get(id(node)), (cst.For, cst.CompFor, cst.Tuple)):
                continue
            use, detail = usage(index, flat, node)
            yield BuiltAccess(scope, node, use, detail, params[node.value], held[params[node.value]][1])
        elif kind is cst.Attribute and node.attr.value in index.param_names:
            path = access_path(node)
            if path is None or not path.parts:
                continue
            owner = holder(path.root, node)
            if owner is None or code_of(node.value, limit=1000) in replaced:
                continue
            use, detail = usage(index, flat, node)
            yield BuiltAccess(scope, node, use, detail, owner, held[owner][1])


def where(access: BuiltAccess) -> str:
    """How the message names the built module: passed in, or built earlier in the function."""
    if access.passed_in:
        return f"`{access.holder}`, a module this function is given after it was built"
    return f"`{access.holder}`, a module built earlier in this function"
