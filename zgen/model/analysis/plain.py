"""Which plain classes of the program (no `nn.Module`) a value is an instance of.

A trainer holds an evaluator, an EMA keeper or a lagged copy of its network as an object of its own
(`self.lagged = Lagged()`, `ema = Ema(model)`, an `__init__` argument annotated `evaluator: Evaluator`). What a
call of such an object's method runs is its class's method: `reach` follows those calls for what they reach,
`effects.resolve_function` for what they do to the models they are handed (`self.lagged.add(self.model)`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from ..program.index import ClassInfo, MethodInfo, ModelIndex, memoised
from ..program.members import Member, facts_of
from ..program.tree import cst, dotted, walk
from .counts import local_bindings
from .flow import Flat, flat_of, loop_items, mapping_walked

__all__ = ["all_bases", "plain_instances", "named_instances", "attribute_instances", "plain_class"]


def all_bases(cls: ClassInfo) -> list[ClassInfo]:
    """Every base of `cls`, in its file and in others (read there)."""
    found: list[ClassInfo] = []
    stack = [cls]
    while stack:
        current = stack.pop()
        for info in current.mro:
            if info not in found:
                found.append(info)
            for _index, base in info.external_bases:
                if base not in found:
                    stack.append(base)
    return found


def inherited_member(cls: ClassInfo, name: str) -> Member | None:
    """What `self.<name>` holds as the class or the first of its bases that sets it says (`all_bases`' order)."""
    return next((m for c in all_bases(cls) if (m := facts_of(c).members.get(name)) is not None), None)


def plain_instances(
    index: ModelIndex, owner: ClassInfo | None, flat: Flat, expr: cst.BaseExpression
) -> tuple[ClassInfo, ...]:
    """The plain classes (of the project, no `nn.Module`) `expr` is an instance of: `self.evaluator` that
    `__init__` builds, a local bound to `Evaluator(model)` in `flat`, an argument annotated `evaluator: Evaluator`,
    or one built in place (`Evaluator(loader).run(model)`)."""
    if isinstance(expr, cst.Call):
        return _built_class(index, expr)
    name = dotted(expr)
    return named_instances(index, owner, flat, name) if name is not None else ()


def named_instances(index: ModelIndex, owner: ClassInfo | None, flat: Flat, name: str) -> tuple[ClassInfo, ...]:
    """`plain_instances` of a value written as a name or `self.<name>`, in `flat` (a method of `owner`)."""
    if name.startswith("self.") and name.count(".") == 1 and owner is not None:
        return attribute_instances(index, owner, name[5:])
    return () if "." in name or not flat.nodes else _local_instances(index, flat, owner).get(name, ())


@memoised
def _local_instances(index: ModelIndex, flat: Flat, owner: ClassInfo | None) -> dict[str, tuple[ClassInfo, ...]]:
    """The plain classes each local of `flat` is bound to an instance of (`ev = Evaluator(model)`, `frame = cls(...)`
    in a classmethod of `owner`, an argument
    annotated `ev: Evaluator`, an item of a list or dict of such objects: `for ema in self.emas`, `ema =
    self.emas[i]`, `for name, ema in self.emas.items()`), read once per function."""
    found: dict[str, tuple[ClassInfo, ...]] = {}
    for node, _ctx in flat.nodes:
        if type(node) is cst.Assign and isinstance(node.value, cst.Call):
            names = [t.target.value for t in node.targets if isinstance(t.target, cst.Name)]
            classes = _built_class(index, node.value) if names else ()
            if names and owner is not None and not owner.is_module and dotted(node.value.func) == "cls":
                classes = (owner,)  # `frame = cls(...)` in a classmethod of the class: an instance of it
        elif type(node) is cst.Assign and isinstance(node.value, cst.Subscript):
            names = [t.target.value for t in node.targets if isinstance(t.target, cst.Name)]
            classes = _item_instances(index, owner, flat, node.value.value) if names else ()
        elif type(node) is cst.For or type(node) is cst.CompFor:
            for target, iterable in loop_items(node.target, node.iter):
                if isinstance(target, cst.Name) and (classes := _item_instances(index, owner, flat, iterable)):
                    found[target.value] = (*found.get(target.value, ()), *classes)
            continue
        elif type(node) is cst.Param and node.annotation is not None:
            names, classes = [node.name.value], plain_class(index, dotted(node.annotation.annotation))
        else:
            continue
        for name in names:
            found[name] = (*found.get(name, ()), *(c for c in classes if c not in found.get(name, ())))
    return found


def _item_instances(
    index: ModelIndex, owner: ClassInfo | None, flat: Flat, container: cst.BaseExpression
) -> tuple[ClassInfo, ...]:
    """The plain classes the items of `container` are instances of: `self.<name>` (or `self.<name>.values()`) built
    as a list, tuple or dict of constructions, or of a comprehension making them (`[Ema(m) for m in models]`)."""
    name = dotted(mapping_walked(container))
    if owner is None or name is None or not name.startswith("self.") or name.count(".") != 1:
        return ()
    return _attribute_items(index, owner, name[5:])


@memoised
def _attribute_items(index: ModelIndex, owner: ClassInfo, name: str) -> tuple[ClassInfo, ...]:
    """`_item_instances` of `self.<name>`, assigned in any method of `owner` or its bases."""
    found: list[ClassInfo] = []
    for method, value in _assigned(all_bases(owner), name):
        found += [c for c in _made_items(method.index, value) if c not in found]
    return tuple(found)


def _made_items(index: ModelIndex, value: cst.BaseExpression) -> tuple[ClassInfo, ...]:
    """The plain classes a literal list, tuple or dict, or a comprehension, builds its items with."""
    if isinstance(value, (cst.List, cst.Tuple)):
        made = [e.value for e in value.elements if isinstance(e, cst.Element)]
    elif isinstance(value, cst.Dict):
        made = [e.value for e in value.elements if isinstance(e, cst.DictElement)]
    elif isinstance(value, (cst.ListComp, cst.GeneratorExp)):
        made = [value.elt]
    elif isinstance(value, cst.DictComp):
        made = [value.value]
    else:
        return ()
    found: list[ClassInfo] = []
    for item in made:
        if isinstance(item, cst.Call):
            found += [c for c in _built_class(index, item) if c not in found]
    return tuple(found)


@memoised
def attribute_instances(index: ModelIndex, owner: ClassInfo, name: str) -> tuple[ClassInfo, ...]:
    """`self.<name>` built as a plain object in `__init__` of `owner` or of a base (in any file)."""
    for cls in all_bases(owner):
        member = facts_of(cls).members.get(name)
        if member is not None and isinstance(member.call, cst.Call):
            found = _built_class(cls.index, member.call)
            if found:
                return found
        found = _annotated_argument(cls, name)
        if found:
            return found
    return _built_later(owner, name)


def _built_later(owner: ClassInfo, name: str) -> tuple[ClassInfo, ...]:
    """`self.evaluator = Evaluator(loader)` in a method other than `__init__` (a `setup()`, a lazy first use) of a
    plain class or its bases: the object the attribute holds once that method ran."""
    if owner.is_module:
        return ()
    found: list[ClassInfo] = []
    for method, value in _assigned((owner,), name):
        if isinstance(value, cst.Call):
            found += [c for c in _built_class(method.index, value) if c not in found]
    return tuple(found)


def _assigned(classes: Iterable[ClassInfo], name: str) -> Iterator[tuple[MethodInfo, cst.BaseExpression]]:
    """(method, value) of each `self.<name> = value` in the methods of `classes`."""
    written = re.compile(rf"self(?<!\wself)\.{re.escape(name)}\s*(?::[^=\n]*)?=[^=]")  # (`\b` after the word: see index)
    for cls in classes:
        for method in cls.all_methods():
            if not written.search(method.text) or method.node is None:
                continue
            for stmt in walk(method.node.body):
                if isinstance(stmt, cst.Assign) and any(dotted(t.target) == f"self.{name}" for t in stmt.targets):
                    yield method, stmt.value


def _annotated_argument(cls: ClassInfo, name: str) -> tuple[ClassInfo, ...]:
    """`def __init__(self, calculator: BatchwiseCalculator): self.calculator = calculator`: the annotation's plain
    class (`Optional[...]` read through)."""
    init = cls.span.methods.get("__init__")
    node = cls.index.method_info(cls, init).node if init is not None else None
    if node is None or f"self.{name}" not in cls.index.skeleton.text(init.start, init.end):
        return ()
    params = {p.name.value: p for p in (*node.params.params, *node.params.kwonly_params)}
    for stmt in walk(node.body):
        if not (type(stmt) is cst.Assign and isinstance(stmt.value, cst.Name) and stmt.value.value in params):
            continue
        if any(dotted(t.target) == f"self.{name}" for t in stmt.targets):
            annotation = params[stmt.value.value].annotation
            if annotation is None:
                return ()
            written = annotation.annotation
            if isinstance(written, cst.Subscript) and dotted(written.value) in ("Optional", "typing.Optional"):
                inner = written.slice[0].slice
                written = inner.value if isinstance(inner, cst.Index) else written
            return plain_class(cls.index, dotted(written))
    return ()


def _built_class(index: ModelIndex, call: cst.Call) -> tuple[ClassInfo, ...]:
    """The plain class a constructor call builds (`Evaluator(model)`, `evals.Evaluator(model)`), or a function of the
    file hands back a construction of (`make_agent(d)` with `return Agent(d)`)."""
    written = dotted(call.func)
    if written is not None and written in index.skeleton.functions:
        return _factory_classes(index, written)
    found = plain_class(index, written)
    if not found and written is not None and written[:1].islower() and "." not in written:
        return _external_factory(index, written)  # `model = define_Model(opt)` of another file
    return found


# `return Agent(d)`: the text without which a function returns no construction
_RETURNS_CALL = re.compile(r"\breturn\s+([A-Za-z_][\w.]*)\(")
_BOUND_CALL = re.compile(r"^[ \t]+([A-Za-z_]\w*)[ \t]*=[ \t]*([A-Za-z_][\w.]*)\(", re.M)


@memoised
def _factory_classes(index: ModelIndex, name: str) -> tuple[ClassInfo, ...]:
    """The plain classes a function of the file returns a construction of; a class its branches import by one name
    (`from models.model_plain import ModelPlain as M` ... `return M(opt)`, KAIR's `define_Model`) is each of them."""
    span = index.skeleton.functions[name]
    text = index.skeleton.text(span.start, span.end)
    # (a trigger, read from the parse: `return Agent(d)`, or `m = M(opt)` ... `return m`)
    returned = _RETURNS_CALL.findall(text) + [m.group(2) for m in _BOUND_CALL.finditer(text)
                                              if re.search(rf"\breturn\s+{m.group(1)}\s*$", text, re.M)]
    imported = "import " in text and any(re.search(rf"import[^\n]*\b{re.escape(w)}\b", text) for w in returned)
    if not imported and not any(plain_class(index, written) for written in returned):
        return ()
    flat = flat_of(index.function_info(name))  # type: ignore[arg-type]
    if flat is None:
        return ()
    local = local_imports(index, flat) if imported else {}
    bindings = local_bindings(flat)  # `m = M(opt)`: the construction a returned local holds
    found: list[ClassInfo] = []
    for node, _ctx in flat.nodes:
        if isinstance(node, cst.Return) and isinstance(node.value, cst.Name):
            made = [v for v in bindings.get(node.value.value, ()) if type(v) is cst.Call]
            node = node.with_changes(value=made[-1]) if made else node
        if isinstance(node, cst.Return) and isinstance(node.value, cst.Call):
            written = dotted(node.value.func)
            for ref in local.get(written or "", ()):
                external = index.external(ref)
                if external is not None and not external[1].is_module and external[1] not in found:
                    found.append(external[1])
            found += [c for c in plain_class(index, written) if c not in found]
    return tuple(found)


@memoised
def local_imports(index: ModelIndex, flat: Flat) -> dict[str, tuple[str, ...]]:
    """Names a function binds by an import in its own body -> what they name, absolute, in the order bound (`from
    .checkpoint import load_state_dict` -> `pkg.runner.checkpoint.load_state_dict`; one name bound on several
    branches, `from .model_plain import ModelPlain as M`, to each of them); once per function."""
    found: dict[str, tuple[str, ...]] = {}
    for node, _ctx in flat.nodes:
        if type(node) is cst.ImportFrom and not isinstance(node.names, cst.ImportStar):
            module = ("." * len(node.relative)) + (dotted(node.module) or "" if node.module is not None else "")
            for alias in node.names:
                name = dotted(alias.name)
                if name is None:
                    continue
                asname = alias.asname.name if alias.asname is not None else None
                bound = asname.value if isinstance(asname, cst.Name) else name
                target = f"{module}.{name}" if not module.endswith(".") else f"{module}{name}"
                found[bound] = (*found.get(bound, ()), index.absolute(target) if target.startswith(".") else target)
        elif type(node) is cst.Import:
            for alias in node.names:
                name = dotted(alias.name)
                if name is not None and alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    found[alias.asname.name.value] = (*found.get(alias.asname.name.value, ()), name)
                elif name is not None:
                    root = name.partition(".")[0]
                    found[root] = (*found.get(root, ()), root)
    return found


def _external_factory(index: ModelIndex, written: str) -> tuple[ClassInfo, ...]:
    """`_factory_classes` of a function of another file of the program, imported by name (`define_Model(opt)`)."""
    found = index.external_function(index.qualify(written))
    if found is None or found[1].node is None or found[1].name not in found[0].skeleton.functions:
        return ()
    return _factory_classes(found[0], found[1].name)


def plain_class(index: ModelIndex, written: str | None) -> tuple[ClassInfo, ...]:
    """The plain class (of this file or imported, no `nn.Module`) a name written in the file is, if any."""
    if not written:
        return ()
    local = index.local_class(written)
    if local is None:
        external = index.external(index.qualify(written))
        local = external[1] if external is not None else None
    return (local,) if local is not None and not local.is_module else ()


