"""Accesses to parameters owned by submodules, and what the code does with them.

`accesses` lists, for one method of a module class, every expression that
names a parameter of a submodule (`self.embed.weight`, `self.layers[0].attn.q.bias`),
or a parameter obtained by iterating `self.parameters()` / `self.child.parameters()`,
together with how it is used: read for computation, size queried, written
in place, initialised, only its metadata read, or checked. ZG101-ZG103 and
ZG301 are filters over this list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from ..program import known
from .flow import Ctx, Flat, ModuleCalls, code_of, flat_of, flatten
from ..program.index import UNKNOWN_CLASS, ClassInfo, Kind, Member, MethodInfo, ModelIndex
from ..program.size import param_numel
from ..program.tree import access_path, call_name, walk

__all__ = [
    "Access",
    "accesses",
    "is_persistent",
    "writes_module_params",
    "usage",
    "READ",
    "SIZE",
    "WRITE",
    "INIT",
    "META",
    "CHECK",
    "ASSIGN",
    "GUARD",
]

READ = "read"  # used for computation
SIZE = "size"  # .shape / .size() / .numel() / len()
WRITE = "write"  # .data = ..., .data.copy_(), .fill_(), p[...] = ...
INIT = "init"  # torch.nn.init.*(p)
META = "meta"  # .dtype / .device / .requires_grad
CHECK = "check"  # `p is None`, isinstance(p, ...), hasattr
ASSIGN = "assign"  # `self.child.weight = ...` (replacing or tying the parameter object)
GUARD = "guard"  # passed to register_external_parameter / GatheredParameters

_GUARD_CALLS = {"register_external_parameter", "GatheredParameters", "unregister_external_parameter"}
_CHECK_CALLS = {"isinstance", "hasattr", "getattr", "id", "type", "callable", "setattr", "delattr"}


@dataclass(frozen=True, slots=True)
class Access:
    """One expression that reaches a parameter owned by a submodule."""

    node: cst.CSTNode  # the expression naming the parameter
    ctx: Ctx
    owner: str  # the owning submodule as written, e.g. `self.embed` ("" when via .parameters())
    param: str  # parameter name, e.g. `weight`
    first: Member | None  # the member of `self` the path starts with
    use: str  # one of READ, SIZE, WRITE, INIT, META, CHECK, ASSIGN, GUARD
    detail: str  # the operation, e.g. `.shape`, `.data.copy_()`, `torch.nn.init.normal_()`
    order: int  # pre-order position of the node in its method
    via_parameters: bool = False
    owner_classes: tuple[str, ...] = ()  # classes the owning submodule may have
    local: bool = False  # owned by a module built in this method (`lin = nn.Linear(...)`)
    given: bool = False  # the parameter itself was handed to this constructor (`Head(cfg, self.embed.weight)`)


def accesses(index: ModelIndex, cls: ClassInfo, method: MethodInfo) -> list[Access]:
    """Parameter accesses through submodules in `method`, read with the members of `cls` (cached)."""
    key = ("_accesses", cls.name)
    cache = method.__dict__
    if key not in cache:
        flat = flat_of(method)
        cache[key] = [] if flat is None else list(_find(index, cls, method, flat))
    return cache[key]


def _find(index: ModelIndex, cls: ClassInfo, method: MethodInfo, flat: Flat):
    members = cls.facts.members
    order = method.order
    param_aliases: dict[str, str] = {}  # name -> what it iterates ("self.parameters()")
    rebuilt: dict[str, int] = {}  # `self.a.b` assigned a newly built module in this method -> where
    # Locals bound to submodules (`for layer in self.layers`) or to modules built here (`lin = nn.Linear(...)`).
    module_aliases = {
        name: Member(name, Kind.MODULE, classes, (-1, 0))
        for name, classes in ModuleCalls(index, cls, flat, method.name).aliases.items()
    }
    # Modules passed in as arguments (an adapter's wrapped layer, a tied embedding handed to a head):
    # built by the caller, so partitioned already. Config-like arguments are not modules.
    node = method.node
    passed_in: set[str] = set()  # arguments taken as modules only when their `.weight` is used
    if node is not None:
        for param in (*node.params.params, *node.params.kwonly_params):
            name = param.name.value
            if name not in ("self", "cls") and name not in module_aliases and not _NOT_A_MODULE_ARG.search(name):
                module_aliases[name] = Member(name, Kind.UNKNOWN, (UNKNOWN_CLASS,), (-1, 0))
                passed_in.add(name)
    built_here: set[str] = set()
    # Parameters handed into this constructor (`Head(cfg, self.embed.weight)`, `w: nn.Parameter`): a caller's
    # module built them, so they are partitioned placeholders under zero.Init.
    given_params = parameters_passed_in(index).get(cls.name, frozenset()) if method.name == "__init__" else ()
    for name in given_params:
        module_aliases.pop(name, None)
        passed_in.discard(name)
    entry = any(m is method for m in cls.entry_methods)
    returned_as_is = method.name != "forward" and any(m is method for m in cls.forward_methods)
    # Run by someone else on the built module (`bias_init`): every child is built, even ones set by a subclass.
    late = any(m is method for m in cls.late_init_methods)
    entry = entry or late
    # In a method called on the built model its own parameters are partitioned too (a base class
    # such as a ModelMixin registers none itself, but every subclass does).
    has_children = entry or any(
        m.kind in (Kind.MODULE, Kind.CONTAINER) and any(index.has_params(c) is not False for c in m.classes)
        for m in members.values()
    )
    param_lists: dict[str, str] = {}  # `ps = list(self.parameters())`: name -> the source iterated
    self_names = {"self"} | {  # `m = self`
        n.targets[0].target.value for n, _ in flat.nodes
        if type(n) is cst.Assign and len(n.targets) == 1 and isinstance(n.targets[0].target, cst.Name)
        and isinstance(n.value, cst.Name) and n.value.value == "self"
    }
    for node, _ctx in flat.nodes:
        if type(node) is cst.For or type(node) is cst.CompFor:
            name = _modules_loop(node)
            if name is not None:  # for m in self.modules(): every submodule, of any class
                module_aliases[name] = Member(name, Kind.UNKNOWN, (UNKNOWN_CLASS,), (-1, 0))
            for name in _zipped_elements(node, members, self_names):  # for a, b in zip(self.cv2, self.cv3)
                module_aliases.setdefault(name, Member(name, Kind.UNKNOWN, (UNKNOWN_CLASS,), (-1, 0)))
            continue
        if type(node) is cst.Assign and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            source = _parameter_list(node.value)
            if source is not None:
                param_lists[node.targets[0].target.value] = source
                continue
        if type(node) is cst.Assign and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            kind, classes = index.classify(node.value)
            name = node.targets[0].target.value
            if kind == Kind.MODULE and classes and type(node.value) is cst.Call:
                module_aliases[name] = Member(name, kind, classes, (-1, 0))
                built_here.add(name)
            elif name not in module_aliases and _from_self(node.value):
                # `emb = self.get_input_embeddings()`, `new = super().resize_token_embeddings(n)`: a module of
                # the model when its `.weight` is used (only `weight`/`bias` count on an unknown module)
                module_aliases[name] = Member(name, Kind.UNKNOWN, (UNKNOWN_CLASS,), (-1, 0))
        elif type(node) is cst.Assign and len(node.targets) == 1 and type(node.value) is cst.Call:
            # `self.emb.pos = nn.Embedding(n, d)` outside `__init__`: a new module, not partitioned, from here on
            target = node.targets[0].target
            path = access_path(target)
            built = path is not None and path.root == "self" and bool(path.parts)
            if built and index.classify(node.value, resolve=True)[0] == Kind.MODULE:
                rebuilt.setdefault(code_of(target), flat.position[id(node)])
    handed = {k: v for k, v in module_aliases.items() if k not in passed_in}  # modules a helper may be given
    for node, ctx in flat.nodes:
        kind = type(node)
        if kind is cst.For or kind is cst.CompFor:
            source = _parameters_source(node.iter)
            if source is None and isinstance(node.iter, cst.Name):
                source = param_lists.get(node.iter.value)
            if source is not None:
                target = node.target
                if isinstance(target, cst.Tuple) and len(target.elements) == 2:  # named_parameters()
                    target = target.elements[1].value
                if isinstance(target, cst.Name):
                    param_aliases[target.value] = source
            continue
        if kind is cst.Name and node.value in given_params:
            parent = flat.parent.get(id(node))
            if isinstance(parent, (cst.Param, cst.Arg)) or (isinstance(parent, cst.Tuple)):
                continue  # its definition, or handed on (followed at the callee)
            use, detail = usage(index, flat, node)
            first = Member(node.value, Kind.UNKNOWN, (UNKNOWN_CLASS,), (-1, 0))
            yield Access(node, ctx, node.value, node.value, first, use, detail, order.get(id(node), 0),
                         owner_classes=(UNKNOWN_CLASS,), given=True)
            continue
        if kind is cst.Name and node.value in param_aliases:
            parent = flat.parent.get(id(node))
            if isinstance(parent, (cst.CompFor, cst.For)) and parent.target is node:
                continue
            if isinstance(parent, cst.Tuple):
                continue
            if not has_children:
                continue  # the module's own parameters only: not partitioned in its `__init__`/forward
            use, detail = usage(index, flat, node)
            yield Access(node, ctx, "", node.value, None, use, detail, order.get(id(node), 0), True)
            continue
        if kind is cst.Call and has_children:
            yield from _module_handed_to_writer(index, cls, flat, node, ctx, members, handed, order)
            func = node.func
            if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
                yield from _through_helper(index, cls, flat, node, func.attr.value, ctx, order)
            continue
        if kind is not cst.Attribute:
            continue
        path = access_path(node)
        if path is None or not path.parts:
            continue
        if path.root in self_names and path.root != "self":
            path = path.__class__("self", path.parts, path.keys)
        if path.root == "self":
            if len(path.parts) == 1 and has_children and not isinstance(flat.parent.get(id(node)), cst.Call):
                yield from _through_helper(index, cls, flat, node, path.parts[0], ctx, order, prop=True)
            borrowed = cls.facts.borrowed.get(path.parts[0])
            if borrowed is not None and len(path.parts) == 1 and members.get(path.parts[0]) is not None:
                # `self.w = lin.weight` with `lin = nn.Linear(...)` built here: `lin`'s partitioned parameter
                local, classes, param = borrowed
                first = Member(local, Kind.MODULE, classes, members[path.parts[0]].order)
                use, detail = usage(index, flat, node)
                yield Access(node, ctx, local, param, first, use, detail, order.get(id(node), 0),
                             owner_classes=classes, local=True)
                continue
            if len(path.parts) < 2:
                own = members.get(path.parts[0]) if entry else None
                if own is not None and own.kind == Kind.PARAM and not own.classes:
                    use, detail = usage(index, flat, node)  # the module's own parameter, partitioned here
                    yield Access(node, ctx, "self", path.parts[0], None, use, detail, order.get(id(node), 0),
                                 owner_classes=(cls.name,))
                continue
            first = members.get(path.parts[0])
            rest = path.parts[1:]
            if first is None and late and _set_elsewhere(cls, path.parts[0]):
                # `self.output_layer.weight` in a base class whose subclasses build `output_layer`
                first = Member(path.parts[0], Kind.UNKNOWN, (UNKNOWN_CLASS,), (-1, 0))
        else:
            first = module_aliases.get(path.root)
            rest = path.parts
            if first is not None and first.kind == Kind.UNKNOWN and ctx.conds:
                first = _narrowed(index, first, ctx) or first
        if first is not None and first.kind == Kind.PARAM and first.classes:
            # `self.proj = nn.Parameter(...) if raw else nn.Linear(...)`: `.weight` is the Linear's
            first = Member(first.name, Kind.MODULE, first.classes, first.order)
        if first is None or first.kind not in (Kind.MODULE, Kind.CONTAINER, Kind.UNKNOWN):
            continue
        owner_classes = _param_owner(index, first, rest)
        if owner_classes is None:
            continue
        if returned_as_is and path.root == "self" and isinstance(flat.parent.get(id(node)), cst.Return):
            continue  # `return self.embed.weight` from a helper forward calls: reported where it is used
        if owner_classes == (UNKNOWN_CLASS,) and _batch_norm(method, code_of(node.value, limit=200)):
            owner_classes = ("torch.nn.BatchNorm2d",)
        use, detail = usage(index, flat, node)
        owner = code_of(node.value)
        fresh = rebuilt.get(owner, len(flat.nodes)) < flat.position[id(node)]
        yield Access(
            node,
            ctx,
            owner,
            path.parts[-1],
            first,
            use,
            detail,
            order.get(id(node), 0),
            owner_classes=owner_classes,
            local=path.root in built_here or fresh,
        )


def _batch_norm(method: MethodInfo, name: str) -> bool:
    """Does the method read `<name>.running_var` / `.running_mean`? Then `<name>` is a batch norm, whose
    per-channel weight and bias stay gathered."""
    return f"{name}.running_var" in method.text or f"{name}.running_mean" in method.text


def _narrowed(index: ModelIndex, alias: Member, ctx: Ctx) -> Member | None:
    """`if isinstance(branch, Conv):`: inside, an argument of unknown class has that module class."""
    for test in reversed(ctx.conds):
        if not isinstance(test, cst.Call) or call_name(test) != "isinstance" or len(test.args) != 2:
            continue
        subject, classes = test.args[0].value, test.args[1].value
        if not isinstance(subject, cst.Name) or subject.value != alias.name:
            continue
        found: tuple[str, ...] = ()
        for option in classes.elements if isinstance(classes, cst.Tuple) else [cst.Element(classes)]:
            kind, refs = index.classify(cst.Call(func=option.value))
            if kind != Kind.MODULE:
                return None  # a class we cannot read: keep the argument unknown
            found += refs
        return Member(alias.name, Kind.MODULE, found, alias.order)
    return None
def _zipped_elements(node: cst.For | cst.CompFor, members: dict[str, Member], self_names: set[str]) -> list[str]:
    """Loop variables bound to elements of module containers of `self` by `for a, b in zip(self.xs, self.ys)`."""
    it, target = node.iter, node.target
    if not isinstance(it, cst.Call) or call_name(it) != "zip" or not isinstance(target, cst.Tuple):
        return []
    found = []
    for element, arg in zip(target.elements, it.args):
        path = access_path(arg.value)
        if path is None or path.root not in self_names or len(path.parts) != 1 or not isinstance(element.value, cst.Name):
            continue
        member = members.get(path.parts[0])
        if member is not None and member.kind == Kind.CONTAINER:
            found.append(element.value.value)
    return found


def parameters_passed_in(index: ModelIndex) -> dict[str, frozenset[str]]:
    """Module classes of this file -> names of `__init__` arguments that receive a parameter of a built module.

    An argument annotated `nn.Parameter`, or one that a constructor call in this file fills with a
    submodule's parameter (`LMHead(config, self.embeddings.word_embeddings.weight)`) or with such an
    argument of its own, handed on (followed to a fixed point). Computed once per file.
    """
    key = ("parameters-passed-in",)
    cached = index.cache.get(key)
    if cached is not None:
        return cached  # type: ignore[return-value]
    found: dict[str, set[str]] = {}
    classes = [c for c in index.module_classes() if c.method("__init__") is not None]
    for cls in classes:
        init = cls.method("__init__")
        if init is None or "Parameter" not in init.text.split(":\n", 1)[0] or init.node is None:
            continue  # no `x: nn.Parameter` in the signature: no need to parse it
        node = init.node
        for param in (*node.params.params, *node.params.kwonly_params):
            if param.annotation is not None and _PARAMETER_TYPE.search(code_of(param.annotation.annotation, 200)):
                found.setdefault(cls.name, set()).add(param.name.value)
    names = "|".join(re.escape(c.name) for c in classes)
    constructs = re.compile(r"(?<![\w.])(?:" + names + r")\s*\(") if names else None
    for _round in range(4):  # a parameter handed through a few constructors
        grew = False
        for cls in classes:
            for method in cls.init_methods:
                handed = found.get(cls.name, set()) if method.name == "__init__" else set()
                if constructs is None or not constructs.search(method.text):
                    continue
                if not _PASSES_PARAMETER.search(method.text) and not any(n in method.text for n in handed):
                    continue
                grew |= _constructor_params(index, cls, method, handed, found)
        if not grew:
            break
    result = {name: frozenset(args) for name, args in found.items()}
    index.cache[key] = result
    return result


_PARAMETER_TYPE = re.compile(r"(?<![\w])(?:nn\.|torch\.nn\.)?Parameter\b")
_PASSES_PARAMETER = re.compile(r"\.(?:weight|bias)\s*[,)]")


def _constructor_params(index: ModelIndex, cls: ClassInfo, method: MethodInfo, handed: set[str],
                        found: dict[str, set[str]]) -> bool:
    """Record the constructor arguments that calls in `method` fill with a partitioned parameter."""
    flat = flat_of(method)
    if flat is None:
        return False
    grew = False
    for node, _ctx in flat.nodes:
        if type(node) is not cst.Call:
            continue
        name = call_name(node)
        callee = index.classes.get(name or "")
        init = callee.method("__init__") if callee is not None and callee.is_module else None
        if init is None or init.node is None:
            continue
        for position, arg in enumerate(node.args):
            value = arg.value
            path = access_path(value)
            if path is None or arg.star:
                continue
            if path.parts:
                member = cls.facts.members.get(path.parts[0]) if path.root == "self" else None
                if member is None or member.kind not in (Kind.MODULE, Kind.CONTAINER, Kind.UNKNOWN):
                    continue
                if len(path.parts) < 2 or path.parts[-1] not in ("weight", "bias") or "[]" in path.parts:
                    continue
            elif path.root not in handed:
                continue
            target = parameter_for(init.node, node, position)
            if target is not None and target not in found.get(callee.name, set()):  # type: ignore[union-attr]
                found.setdefault(callee.name, set()).add(target)  # type: ignore[union-attr]
                grew = True
    return grew


def _set_elsewhere(cls: ClassInfo, name: str) -> bool:
    """Is `self.<name>` neither a method, a property nor assigned in any method of `cls` (so a subclass sets it)?"""
    if cls.inherited_method(name) is not None:
        return False
    assigned = re.compile(r"\bself\." + re.escape(name) + r"\s*(?::[^=\n]*)?=[^=]|[\"']" + re.escape(name) + r"[\"']")
    return not any(assigned.search(m.text) for m in cls.all_methods())


def _from_self(value: cst.BaseExpression) -> bool:
    """A call of a method of `self` or `super()` (`self.get_input_embeddings()`)."""
    if not isinstance(value, cst.Call) or not isinstance(value.func, cst.Attribute):
        return False
    root = value.func.value
    if isinstance(root, cst.Call) and call_name(root) == "super":
        return True
    return isinstance(root, cst.Name) and root.value == "self"


def _parameter_list(value: cst.BaseExpression) -> str | None:
    """`list(self.parameters())` or `[p for n, p in self.named_parameters() if ...]`: what it lists."""
    if isinstance(value, cst.Call) and call_name(value) in {"list", "tuple"} and value.args:
        return _parameters_source(value.args[0].value)
    if isinstance(value, cst.ListComp) and isinstance(value.elt, cst.Name):
        target = value.for_in.target
        if isinstance(target, cst.Tuple) and len(target.elements) == 2:
            target = target.elements[1].value
        if isinstance(target, cst.Name) and target.value == value.elt.value and value.for_in.inner_for_in is None:
            return _parameters_source(value.for_in.iter)
    return None


def _modules_loop(node: cst.For | cst.CompFor) -> str | None:
    """The loop variable of `for m in self.modules()` / `for n, m in self.child.named_modules()`."""
    iterable = node.iter
    if not isinstance(iterable, cst.Call) or not isinstance(iterable.func, cst.Attribute):
        return None
    if iterable.func.attr.value not in {"modules", "named_modules", "children", "named_children"}:
        return None
    path = access_path(iterable.func.value)
    if path is None or path.root != "self":
        return None
    target = node.target
    if isinstance(target, cst.Tuple) and len(target.elements) == 2:
        target = target.elements[1].value
    return target.value if isinstance(target, cst.Name) else None


def _parameters_source(iterable: cst.BaseExpression) -> str | None:
    """`self.parameters()` / `self.child.named_parameters()`: the text, if the loop walks a module's parameters."""
    if isinstance(iterable, cst.Call) and (call_name(iterable) or "") in {"enumerate", "list", "zip"} and iterable.args:
        iterable = iterable.args[0].value
    if not isinstance(iterable, cst.Call) or not isinstance(iterable.func, cst.Attribute):
        return None
    if iterable.func.attr.value not in {"parameters", "named_parameters"}:
        return None
    for arg in iterable.args:  # parameters(recurse=False): only the module's own, gathered in its forward
        if arg.keyword is not None and arg.keyword.value == "recurse":
            return None
    path = access_path(iterable.func.value)
    if path is None or path.root != "self":
        return None
    return "self" + "".join("." + p for p in path.parts) + "." + iterable.func.attr.value + "()"


def config_like(name: str) -> bool:
    """Is an argument named like a config, a size or a tensor rather than a module (`cfg`, `x`, `weight`)?"""
    return bool(_NOT_A_MODULE_ARG.search(name))


_NOT_A_MODULE_ARG = re.compile(r"conf|cfg|args|opt|param|hparams|kwargs|setting|^x$|^p$|weight|bias|tensor|state")
# Attributes of an unknown object that hold settings or state, not submodules.
_NOT_A_SUBMODULE = re.compile(r"conf|cfg|args|opt|hparams|kwargs|setting|state|stats|cache|data|grad")


def _param_owner(index: ModelIndex, first: Member, rest: tuple[str, ...]) -> tuple[str, ...] | None:
    """If `self.<first>.<rest...>` ends at a parameter of a submodule, the classes of that submodule."""
    kind, classes = first.kind, first.classes
    for i, part in enumerate(rest):
        last = i == len(rest) - 1
        if kind == Kind.CONTAINER:
            if last and part != "[]":
                # a member built as a container on one path and as a layer on another (`nn.Conv2d` or a stem)
                layers = tuple(c for c in classes if index.member_param(c, part))
                return layers or None
            if part != "[]" and part in known.CONTAINER_METHODS:
                return None
            kind = Kind.MODULE  # `layers[0]`, or a ModuleDict entry by attribute (`transformer.wpe`)
            continue
        if kind == Kind.UNKNOWN or classes in ((UNKNOWN_CLASS,), ()):
            if i == 0 and kind == Kind.UNKNOWN and config_like(first.name):
                return None  # `self.cfg.loss.weight`: a settings object, not a module
            if part == "[]" or (not last and not _NOT_A_SUBMODULE.search(part)):
                continue  # `self.model.decoder.embed_tokens.weight` of a wrapped model we cannot read
            if last and part in {"weight", "bias"}:
                return (UNKNOWN_CLASS,)
            if last and i == 0 and not _NOT_A_SUBMODULE.search(first.name) and part in index.related_param_names:
                return (UNKNOWN_CLASS,)  # `self.encoder.pos_embedding`: a parameter name of this package
            if part == "[]":
                continue
            if last:
                return (UNKNOWN_CLASS,) if part in {"weight", "bias"} else None
            settings = any(_NOT_A_SUBMODULE.search(p) for p in rest[:-1])  # `self.model.config.loss.weight`
            if i == 0 and kind == Kind.UNKNOWN and not config_like(first.name) and rest[-1] in {"weight", "bias"} \
                    and not settings:
                # `self.decoders.token_embedding.weight` of a module loaded or passed in: we cannot see its
                # children, but a `.weight` two levels down is a child's parameter
                return (UNKNOWN_CLASS,) if "[]" not in rest and len(rest) <= 3 else None
            return None
        if kind != Kind.MODULE or part == "[]":
            return None
        next_member = None
        for ref in classes:
            answer = index.member_param(ref, part)
            if answer or (answer is None and last and part in {"weight", "bias"}):
                return classes if last else None
            next_member = next_member or index.member_of(ref, part)
        if next_member is None:
            return None
        kind, classes = next_member.kind, next_member.classes
    return None


def usage(index: ModelIndex, flat: Flat, node: cst.CSTNode) -> tuple[str, str]:
    """How the parameter expression `node` is used, and the operation as text."""
    parent = flat.parent.get(id(node))
    data = ""
    if isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value == "data":
        node, parent, data = parent, flat.parent.get(id(parent)), ".data"
    if isinstance(parent, cst.Attribute) and parent.value is node:
        attr = parent.attr.value
        grand = flat.parent.get(id(parent))
        called = isinstance(grand, cst.Call) and grand.func is parent
        if attr in known.METADATA_ATTRS or attr in _DS_ATTRS:
            return META, f".{attr}"  # ZeRO-3's own attributes describe the full parameter
        if not data and isinstance(grand, cst.AssignTarget) and grand.target is parent:
            return META, f".{attr} = ..."  # `p.shared = True`: a Python attribute on the parameter object
        if called and (attr.startswith("new_") or attr == "get_device" or (attr == "type" and not grand.args)):
            return META, f".{attr}()"  # p.new_zeros(n): a fresh tensor of p's dtype and device; p.type(): a name
        if attr in known.SIZE_ATTRS:
            return (CHECK, f".{attr}") if _zero3_probe(flat, parent) else (SIZE, f".{attr}")
        if attr in known.SIZE_METHODS and called:
            return (CHECK, f".{attr}()") if _zero3_probe(flat, grand) else (SIZE, f".{attr}()")
        if called and known.INPLACE_METHOD.match(attr):
            return WRITE, f"{data}.{attr}()"
        return READ, f"{data}.{attr}"
    if isinstance(parent, cst.AssignTarget) and parent.target is node:
        return (WRITE, f"{data} = ...") if data else (ASSIGN, " = ...")
    if isinstance(parent, cst.AugAssign) and parent.target is node:
        return WRITE, f"{data} {parent.operator.__class__.__name__} ..."
    if isinstance(parent, cst.Subscript) and parent.value is node:
        holder = flat.parent.get(id(parent))
        if isinstance(holder, (cst.AssignTarget, cst.AugAssign)) and holder.target is parent:
            return WRITE, f"{data}[...] = ..."
        view_use, view_detail = usage(index, flat, parent)  # `p[a:b].data.zero_()` writes through a view
        if view_use in (WRITE, INIT):
            return view_use, f"{data}[...]{view_detail}"
        return READ, f"{data}[...]"
    if isinstance(parent, cst.Arg):
        call = flat.parent.get(id(parent))
        name = call_name(call) if isinstance(call, cst.Call) else None
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.args:
            if call.func.attr.value in _DTYPE_DEVICE_OF_ARG and call.args[0] is parent:
                return META, f" as `.{call.func.attr.value}()` argument"  # x.to(p): p's dtype and device only
        if name:
            qualified = name if name.startswith(".") else index.qualify(name)
            last = qualified.rsplit(".", 1)[-1]
            if last in _GUARD_CALLS:
                return GUARD, f"{last}()"
            if last in _CHECK_CALLS:
                return CHECK, f"{last}()"
            if last == "len":
                return SIZE, "len()"
            if qualified.startswith(known.INIT_PREFIXES) or (name.startswith("init.") and last.endswith("_")):
                return INIT, f"{qualified}()"
            if "." not in name and (name in _nested_defs(index, flat) or name in index.skeleton.functions):
                # A function we can read: its body decides, not its name.
                if _callee_writes(index, flat, call, parent, name):
                    return WRITE, f"{data} passed to `{name}()`, which writes it in place"
                return READ, data
            if _inplace_initialiser(index, call, parent, name, last) or _init_callable(call, parent, last):
                return INIT, f"{qualified}()"
        return READ, data
    if isinstance(parent, cst.Element):  # GatheredParameters([p, q]): each element is gathered
        holder = flat.parent.get(id(flat.parent.get(id(parent))))
        call = flat.parent.get(id(holder)) if isinstance(holder, cst.Arg) else None
        name = call_name(call) if isinstance(call, cst.Call) else None
        if name and name.rsplit(".", 1)[-1] in _GUARD_CALLS:
            return GUARD, f"{name.rsplit('.', 1)[-1]}()"
    if isinstance(parent, cst.ComparisonTarget):
        if isinstance(parent.operator, (cst.Is, cst.IsNot)):
            return CHECK, " is None"
    if isinstance(parent, cst.Comparison) and parent.comparisons:
        if isinstance(parent.comparisons[0].operator, (cst.Is, cst.IsNot)):
            return CHECK, " is None"
    return READ, data


# Methods that take only the dtype and device of a tensor argument: `x.to(p)`, `x.type_as(p)`.
_DTYPE_DEVICE_OF_ARG = frozenset({"to", "type_as"})
_DS_ATTRS = frozenset({"ds_numel", "ds_shape", "ds_id", "ds_status", "ds_tensor"})


def _zero3_probe(flat: Flat, node: cst.CSTNode | None) -> bool:
    """Is this size query part of the ZeRO-3 detection idiom (`p.numel() == 0 and hasattr(p, "ds_numel")`,
    `getattr(p, "ds_numel", p.numel())`)? The enclosing expression statement or test mentions a `ds_*` name."""
    current = node
    for _ in range(8):
        current = flat.parent.get(id(current)) if current is not None else None
        if current is None or isinstance(current, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            break
        if isinstance(current, (cst.BooleanOperation, cst.Call)):
            for inner in walk(current):
                if isinstance(inner, cst.SimpleString) and inner.evaluated_value in _DS_ATTRS:
                    return True
                if isinstance(inner, cst.Attribute) and inner.attr.value in _DS_ATTRS:
                    return True
    return False


def _through_helper(index, cls, flat, node, name, ctx, order, prop=False):
    """`self.helper()`, a property `self.weight`, or a stored lambda `self.to_logits(h)` whose body reads a
    submodule's parameter: the read happens here. Helpers `forward` reaches in this file are checked in
    their own body instead."""
    for parts in _helper_reads(index, cls, name, prop):
        member = cls.facts.members.get(parts[0])
        if member is None:
            continue
        owner_classes = _param_owner(index, member, parts[1:])
        if owner_classes is None:
            continue
        use, detail = usage(index, flat, node)
        owner = "self." + ".".join(parts[:-1])
        detail = f" (through `{name}`, which reads `{owner}.{parts[-1]}`){detail}"
        yield Access(node, ctx, owner, parts[-1], member, use, detail, order.get(id(node), 0),
                     owner_classes=owner_classes)


def _helper_reads(index: ModelIndex, cls: ClassInfo, name: str, prop: bool) -> tuple[tuple[str, ...], ...]:
    """Paths `self.a.b.weight` that a helper method, property or stored lambda of `cls` returns or computes with."""
    key = ("helper-reads", cls.name, name, prop)
    if key in index.cache:
        return index.cache[key]  # type: ignore[return-value]
    index.cache[key] = ()
    body: cst.CSTNode | None = None
    reached = False
    if not prop and name in cls.facts.lambdas:
        body = cls.facts.lambdas[name].body
    else:
        method = cls.inherited_method(name)
        is_property = method is not None and method.text.lstrip().startswith("@property")
        reached = method is not None and any(m is method for m in cls.forward_methods)
        if reached and "return self." not in method.text:  # type: ignore[union-attr]
            method = None  # checked in its own body; only a parameter it returns as is concerns the caller
        if method is not None and is_property == prop and method.node is not None:
            body = method.node
    found: list[tuple[str, ...]] = []
    if body is not None:
        values = [body] if isinstance(body, cst.BaseExpression) else [
            stmt.value for stmt in walk(body) if isinstance(stmt, cst.Return) and stmt.value is not None
        ]
        if reached:  # checked in its own body, except a parameter it returns as is: the caller uses that
            values = [v for v in values if isinstance(v, cst.Attribute)]
        for value in values:
            described = {
                id(e.value) for e in walk(value)
                if isinstance(e, cst.Attribute) and (e.attr.value in known.METADATA_ATTRS or e.attr.value in known.SIZE_ATTRS)
            }
            for expr in walk(value):
                if isinstance(expr, cst.Attribute) and id(expr) not in described:
                    path = access_path(expr)
                    if path and path.root == "self" and len(path.parts) >= 2 and "[]" not in path.parts:
                        if path.parts[-1] in index.param_names and path.parts not in found:
                            found.append(path.parts)
    result = tuple(found)
    index.cache[key] = result
    return result


def _module_handed_to_writer(index, cls, flat, call, ctx, members, module_aliases, order):
    """A built module handed to a helper that initialises its parameters: `init_layer(self.conv1)`,
    `named_apply(init_fn, self)` (a walk over every submodule without `nn.Module.apply`'s gathering)."""
    name = call_name(call)
    if not name or name.startswith("."):
        return
    last = name.rsplit(".", 1)[-1]
    if _FREE_APPLY.search(last) and "." not in name:
        for arg in call.args:
            if isinstance(arg.value, cst.Name) and arg.value.value == "self":
                detail = f" passed to `{name}()`, which runs a function on every submodule without gathering them"
                yield Access(arg.value, ctx, "self", "parameters", None, INIT, detail, order.get(id(call), 0))
        return
    if not any(_module_arg(arg.value, members, module_aliases) for arg in call.args):
        return  # no module handed over: do not read the function at all
    found = resolve_function(index, flat, name)
    if found is None:
        return
    func = found[1]
    effects = module_arg_effects(found[0], func)
    written = frozenset(n for n, done in effects.items() if done & {WRITE, INIT})
    sized = frozenset(n for n, done in effects.items() if SIZE in done) - written
    if not written and not sized:
        return
    params = [p.name.value for p in (*func.params.posonly_params, *func.params.params)]
    if params[:1] == ["self"]:
        params = params[1:]
    positional = [a for a in call.args if a.keyword is None and not a.star]
    for arg in call.args:
        target = arg.keyword.value if arg.keyword is not None else None
        if target is None and arg in positional and positional.index(arg) < len(params):
            target = params[positional.index(arg)]
        if target not in written and target not in sized:
            continue
        path = access_path(arg.value)
        if path is None:
            continue
        first = members.get(path.parts[0]) if path.root == "self" and path.parts else module_aliases.get(path.root)
        if first is None or first.kind not in (Kind.MODULE, Kind.CONTAINER, Kind.UNKNOWN):
            continue
        if not any(index.has_params(c) is not False for c in first.classes):
            continue
        if target in written:
            detail = f" passed to `{name}()`, which initialises its parameters"
            yield Access(arg.value, ctx, code_of(arg.value), "parameters", first, INIT, detail, order.get(id(call), 0))
        else:
            detail = f" passed to `{name}()`, which reads the sizes of its parameters"
            yield Access(arg.value, ctx, code_of(arg.value), "parameters", first, SIZE, detail, order.get(id(call), 0))


def writes_module_params(index: ModelIndex, flat: Flat, name: str) -> bool:
    """Does the function `name` (nested in `flat`, of this file or imported) write its module argument's parameters?"""
    found = resolve_function(index, flat, name)
    if found is None:
        return False
    owner, func = found
    return any(effects & {WRITE, INIT} for effects in module_arg_effects(owner, func).values())


def _module_arg(expr: cst.BaseExpression, members, module_aliases) -> bool:
    """Is `expr` a submodule of `self` or a local bound to a module (by its first name only)?"""
    path = access_path(expr)
    if path is None:
        return False
    if path.root == "self":
        member = members.get(path.parts[0]) if path.parts else None
        return member is not None and member.kind in (Kind.MODULE, Kind.CONTAINER, Kind.UNKNOWN)
    return path.root in module_aliases


_FREE_APPLY = re.compile(r"^(?:named_apply|\w+_apply|apply_\w+)$")


def resolve_function(index: ModelIndex, flat: Flat | None, name: str) -> tuple[ModelIndex, cst.FunctionDef] | None:
    """The function a call names, with the index of its file: nested in `flat`, of this file, or imported."""
    if "." not in name:
        func = _nested_defs(index, flat).get(name) if flat is not None else None
        if func is not None:
            return index, func
        info = index.function_info(name)
        if info is not None and info.node is not None:
            return index, info.node
    external = index.external_function(index.qualify(name))
    if external is None or external[1].node is None:
        return None
    return external[0], external[1].node


def _nested_defs(index: ModelIndex, flat: Flat) -> dict[str, cst.FunctionDef]:
    """Functions defined inside a flattened function, by name (once per function)."""
    key = ("nested-defs", id(flat))
    found = index.cache.get(key)
    if found is None or found[0] is not flat:
        defs = {n.name.value: n for n, _ in flat.nodes if type(n) is cst.FunctionDef}
        found = index.cache[key] = (flat, defs)
    return found[1]  # type: ignore[index]


# What a function may do to a module it is given, besides writing (WRITE/INIT) and sizing (SIZE) its parameters.
REPARAMETRIZES = "reparametrize"  # weight_norm(module): new parameters derived from the current weights
DEEPCOPIES = "deepcopy"  # copy.deepcopy(module): a copy of whatever the module holds now


def module_arg_effects(index: ModelIndex, func: cst.FunctionDef) -> dict[str, frozenset[str]]:
    """What `func` does to each module it is given, by parameter name: a summary read once per function.

    The effects are WRITE/INIT (`nn.init.xavier_(m.weight)`, `init_fn(m.weight)`, `p.data.zero_()` for
    `p` in `m.parameters()`), SIZE (`m.weight.shape[0]`, `p.numel()`), REPARAMETRIZES (`weight_norm(m)`)
    and DEEPCOPIES (`copy.deepcopy(m)`), also through the functions it hands the module on to
    (`return weight_norm(module)` two helpers down). `index` is the index of the file `func` is in.
    """
    key = ("module-arg-effects", id(func))
    cached = index.cache.get(key)
    if cached is not None:
        return cached  # type: ignore[return-value]
    index.cache[key] = {}  # a function that hands its argument to itself: no answer from the cycle
    params = [p.name.value for p in (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params)]
    names = set(params) - {"self", "cls"}
    inner = flatten(func)
    aliases: dict[str, str] = {}  # for m in module.modules(): m -> module
    for node, _ctx in inner.nodes:
        if type(node) is cst.For or type(node) is cst.CompFor:
            it = node.iter
            if isinstance(it, cst.Call) and (call_name(it) or "") in {"enumerate", "list"} and it.args:
                it = it.args[0].value
            target = node.target
            if isinstance(target, cst.Tuple) and len(target.elements) == 2:  # named_parameters()
                target = target.elements[1].value
            if not isinstance(target, cst.Name) or not isinstance(it, cst.Call) or not isinstance(it.func, cst.Attribute):
                continue
            owner = it.func.value
            if isinstance(owner, cst.Name) and owner.value in names and it.func.attr.value in _WALKS:
                aliases[target.value] = owner.value
    found: dict[str, set[str]] = {}
    for node, ctx in inner.nodes:
        if ctx.guarded:
            continue  # the helper gathers first
        kind = type(node)
        if kind is cst.Attribute:
            path = access_path(node)
            if path is None or not path.parts or path.parts[-1] == "data":
                continue
            owner = path.root if path.root in names else aliases.get(path.root)
            if owner is None or path.parts[-1] not in index.param_names:
                continue
            use, _detail = usage(index, inner, node)
            if use == READ and _given_callable(inner, node, names):
                use = INIT  # `def init_layer(m, init_fn): init_fn(m.weight)`: an initialiser handed in
            if use in (WRITE, INIT, SIZE):
                found.setdefault(owner, set()).add(use)
        elif kind is cst.Name and node.value in aliases:
            if isinstance(inner.parent.get(id(node)), (cst.For, cst.CompFor, cst.Tuple)):
                continue
            use, _detail = usage(index, inner, node)
            if use in (WRITE, INIT, SIZE):
                found.setdefault(aliases[node.value], set()).add(use)
        elif kind is cst.Call and node.args:
            _call_effects(index, inner, node, names, found)
    result = {name: frozenset(done) for name, done in found.items()}
    index.cache[key] = result
    return result


def _given_callable(flat: Flat, node: cst.CSTNode, names: set[str]) -> bool:
    """Is `node` the first argument of a call of one of the function's own arguments (`fn(m.weight, std)`)?"""
    arg = flat.parent.get(id(node))
    call = flat.parent.get(id(arg)) if isinstance(arg, cst.Arg) else None
    return (
        isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value in names
        and bool(call.args) and call.args[0] is arg and arg.keyword is None
    )


# Iterations over a module that reach its parameters (or its submodules' parameters).
_WALKS = frozenset({"modules", "parameters", "children", "named_modules", "named_parameters", "named_children"})


def _call_effects(index: ModelIndex, flat: Flat, call: cst.Call, names: set[str], found: dict[str, set[str]]) -> None:
    """Effects on the function's module arguments of one call it makes: a re-parametrisation, a deep copy,
    or a helper whose own summary says what it does to the argument handed on."""
    name = call_name(call)
    if not name or name.startswith("."):
        return
    handed = [
        (i, arg) for i, arg in enumerate(call.args)
        if isinstance(arg.value, cst.Name) and arg.value.value in names and not arg.star
    ]
    if not handed:
        return
    qualified = index.qualify(name)
    last = qualified.rsplit(".", 1)[-1]
    first = call.args[0]
    if first.keyword is None and isinstance(first.value, cst.Name) and first.value.value in names:
        if last in known.REPARAMETRIZE:
            found.setdefault(first.value.value, set()).add(REPARAMETRIZES)
            return
        if qualified in ("copy.deepcopy", "deepcopy"):
            found.setdefault(first.value.value, set()).add(DEEPCOPIES)
            return
    if "." in name and name.partition(".")[0] in ("self", "super"):
        return
    target = resolve_function(index, flat, name)
    if target is None:
        return
    callee_index, callee = target
    effects = module_arg_effects(callee_index, callee)
    if not effects:
        return
    for position, arg in handed:
        parameter = parameter_for(callee, call, position)
        if parameter in effects:
            found.setdefault(arg.value.value, set()).update(effects[parameter])  # type: ignore[union-attr]


def parameter_for(func: cst.FunctionDef, call: cst.Call, position: int) -> str | None:
    """The parameter of `func` that argument number `position` of `call` binds (by keyword or position)."""
    arg = call.args[position]
    if arg.keyword is not None:
        return arg.keyword.value
    params = [p.name.value for p in (*func.params.posonly_params, *func.params.params)]
    if params[:1] in (["self"], ["cls"]):
        params = params[1:]
    at = sum(1 for a in call.args[:position] if a.keyword is None and not a.star)
    return params[at] if at < len(params) else None


def _init_callable(call: cst.Call, arg: cst.Arg, last: str) -> bool:
    """`config.init_method(p)`, `self.init_fn(p)`, `initializer(p)`: a callable named for initialising, given `p` first."""
    return (
        bool(_INIT_CALLABLE.search(last))
        and bool(call.args)
        and call.args[0] is arg
        and arg.keyword is None
        and not arg.star
    )


_INIT_CALLABLE = re.compile(r"^(?:init_method|output_layer_init_method|init_fn|init_func|initializer|weight_init|init_weight)$")


def _callee_writes(index: ModelIndex, flat: Flat, call: cst.Call, arg: cst.Arg, name: str) -> bool:
    """Does the called function (nested in this method, or of this file) write that parameter in place?

    `def rescale(param, i): param.div_(i)` then `rescale(layer.proj.weight.data, i)`.
    """
    if "." in name or arg.star:
        return False
    func = _nested_defs(index, flat).get(name)
    if func is None:
        info = index.function_info(name)
        func = info.node if info is not None else None
    if func is None:
        return False
    params = [p.name.value for p in (*func.params.posonly_params, *func.params.params)]
    if arg.keyword is not None:
        target = arg.keyword.value
    else:
        position = [a for a in call.args if a.keyword is None].index(arg)
        if position >= len(params):
            return False
        target = params[position]
    return target in _written_params(index, func)


def _written_params(index: ModelIndex, func: cst.FunctionDef) -> frozenset[str]:
    """Names of `func`'s parameters that it writes in place (`p.div_()`, `p.data = `, `p[...] = `, `init.*_(p)`)."""
    key = ("written-params", id(func))
    cached = index.cache.get(key)
    if cached is not None:
        return cached  # type: ignore[return-value]
    index.cache[key] = frozenset()  # a function that passes its parameter to itself: no answer from the cycle
    names = {p.name.value for p in (*func.params.posonly_params, *func.params.params)}
    inner = flatten(func)
    copies = _rebound_to_copies(inner, names)
    written = set()
    for node, ctx in inner.nodes:
        if ctx.guarded:
            continue  # the helper gathers first (`GatheredParameters(out, modifier_rank=0)`)
        if type(node) is cst.Name and node.value in names:
            parent = inner.parent.get(id(node))
            if isinstance(parent, cst.Param):
                continue
            use, _detail = usage(index, inner, node)
            if use in (WRITE, INIT) and not _after_copy(inner, node, copies.get(node.value, ())):
                written.add(node.value)
    result = frozenset(written)
    index.cache[key] = result
    return result


# Calls that return a new tensor, never a view of their input: `b = b.clone()` ends the alias.
_COPIES = frozenset(
    {"clone", "zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like", "cat", "stack", "tensor"}
)


def _rebound_to_copies(flat: Flat, names: set[str]) -> dict[str, list[tuple[cst.CSTNode, int]]]:
    """For each argument name rebound to a copy (`b = b.clone()`, `b = b * 2`): the block and position of that."""
    found: dict[str, list[tuple[cst.CSTNode, int]]] = {}
    for node, _ctx in flat.nodes:
        if type(node) is not cst.Assign or len(node.targets) != 1:
            continue
        target = node.targets[0].target
        if not (isinstance(target, cst.Name) and target.value in names and _makes_copy(node.value)):
            continue
        block = flat.parent.get(id(node))
        while block is not None and not isinstance(block, (cst.IndentedBlock, cst.FunctionDef)):
            block = flat.parent.get(id(block))
        if block is not None:
            found.setdefault(target.value, []).append((block, flat.position[id(node)]))
    return found


def _makes_copy(value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.BinaryOperation):
        return True  # arithmetic makes a new tensor
    while isinstance(value, (cst.Call, cst.Attribute, cst.Subscript)):
        if isinstance(value, cst.Call):
            name = call_name(value) or ""
            if name.rsplit(".", 1)[-1] in _COPIES:
                return True
            value = value.func
        value = value.value if isinstance(value, (cst.Attribute, cst.Subscript)) else value
    return False


def _after_copy(flat: Flat, node: cst.CSTNode, copies) -> bool:
    """Is `node` after a rebinding to a copy, in that rebinding's block (so it names the copy, not the argument)?"""
    position = flat.position[id(node)]
    for block, where in copies:
        if position <= where:
            continue
        ancestor = flat.parent.get(id(node))
        while ancestor is not None and ancestor is not block:
            ancestor = flat.parent.get(id(ancestor))
        if ancestor is block:
            return True
    return False


def _inplace_initialiser(index: ModelIndex, call: cst.Call, arg: cst.Arg, name: str, last: str) -> bool:
    """`trunc_normal_(p, ...)`: a function named with PyTorch's in-place underscore, taking `p` first.

    A function means an imported name, a function of this file or a conventional alias
    (`torch`, `nn`); `self.w.copy_(p)` is a method of another tensor and only reads `p`.
    """
    head = name.partition(".")[0]
    return (
        (head in index.imports or head in index.skeleton.functions or head in known.CONVENTIONAL_ALIASES)
        and last.endswith("_")
        and not last.startswith(("_", "clip_grad"))
        and bool(call.args)
        and call.args[0] is arg
        and arg.keyword is None
        and arg.star == ""
    )


def scoped_accesses(index: ModelIndex, scope: str):
    """(class, method, access) for parameter accesses through submodules in `forward`, `init` or `entry` scope.

    `entry` is the methods a training loop calls on the built model (`ClassInfo.entry_methods`),
    where every parameter is partitioned just as outside a forward; `late` is the initialisers
    that someone else runs on the built module (`ClassInfo.late_init_methods`), where every
    child is built.

    In `init` scope only accesses after the submodule was built count: under
    `deepspeed.zero.Init` a submodule is partitioned as soon as its own
    `__init__` returns, so the parent's `__init__` sees placeholders from then on.
    Guarded sites (inside `GatheredParameters`, or under a zero3/synced_gpus test) are left out.
    """
    for cls, method in index.methods(scope):
        may = _may_access(index, method)
        hands = scope in ("init", "late") and (not may or scope == "late") and _hands_module(method.text)
        if not may and not hands:
            if scope == "forward" and _mentions_helper(index, cls, method.text):
                pass
            elif scope != "entry" or not _mentions_own_param(index, cls, method.text):
                continue
        if scope in ("entry", "late") and not hands and not _ENTRY_USES.search(method.text):
            continue  # only writes and size queries are checked there: no need to parse a plain reader
        if scope == "entry" and _runs_gathered(cls, method):
            continue
        rank = 0
        if scope == "init":
            rank = next((i for i, m in enumerate(cls.init_methods) if m is method), 0)
        given = _arguments(method) if scope == "late" else ()
        for access in accesses(index, cls, method):
            if access.ctx.guarded or (access.local and scope != "init"):
                continue
            if access.first is not None and access.first.name in given:
                continue  # a module the caller hands over (and may have gathered): judged at that call
            if scope != "init" and access.use not in (WRITE, INIT) and _persistent(index, access):
                continue  # small enough that ZeRO-3 keeps it gathered: reading it is free (writing is not)
            if scope == "init" and not _built_before(access, rank):
                continue
            if scope == "init" and _deferred(method, access.node):
                continue  # `self.to_logits = lambda t: t @ self.emb.weight.t()`: runs later, in forward
            yield cls, method, access


def _deferred(method: MethodInfo, node: cst.CSTNode) -> bool:
    """Is `node` inside a lambda stored by `method` (run later, not when `method` runs)?

    Only lambdas: a function nested in `__init__` is usually called right there (`init(self.conv)`).
    A lambda handed straight to a call (`self.apply(lambda m: ...)`) does run now, so only one
    assigned to something counts as deferred.
    """
    flat = flat_of(method)
    if flat is None:
        return False
    child, parent = node, flat.parent.get(id(node))
    while parent is not None:
        if isinstance(parent, cst.Lambda):
            holder = flat.parent.get(id(parent))
            return isinstance(holder, (cst.Assign, cst.AnnAssign))
        if isinstance(parent, cst.FunctionDef):
            return False
        child, parent = parent, flat.parent.get(id(parent))
    return False


def _arguments(method: MethodInfo) -> frozenset[str]:
    node = method.node
    if node is None:
        return frozenset()
    params = node.params
    return frozenset(p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params))


# What a write, size query or value read looks like in text: `.data`, an in-place call `x_(`, `.shape`,
# `.size(`, `numel(`, an item assignment `] =`, `.weight[...]` / `.weight.float()`.
_ENTRY_USES = re.compile(
    r"\.data\b|\w_\(|\.shape\b|\.size\(|numel\(|\]\s*[-+*/]?=[^=]"
    r"|\.(?:weight|bias)\w*\s*(?:\[|\.(?!dtype\b|device\b|requires_grad\b|is_\w))"
    r"|=\s*[\w.]+\.(?:weight|bias)\w*\s*$",  # bound to a local (`kernel = branch.conv.weight`)
    re.MULTILINE,
)


# `init_layer(self.conv1)`, `named_apply(fn, self)`: a module of `self` handed to a function.
_HANDS_SELF = re.compile(
    r"(?<![\w.])(?<!def )(?![A-Z])(?!(?:super|isinstance|issubclass|getattr|setattr|hasattr|delattr|len|print|type|id|str|repr|list"
    r"|tuple|dict|set|zip|enumerate|range|int|float|bool|iter|next|sorted|reversed|min|max|sum|any|all|callable"
    r"|vars|dir|format|hash)\()\w+\((?:[^()]*,\s*)?self(?!\.config\b)(?:\.\w+)*(?:\[[^\]]*\])?\s*[,)]"
)


# `for emb in self.emb: init_layer(emb, ...)`: a submodule, by its loop variable, handed to a function.
_HANDS_ALIAS = re.compile(r"for (\w+) in self\.[\s\S]*?(?<![\w.])[a-z_]\w*\(\s*\1\s*[,)]")


def _mentions_helper(index: ModelIndex, cls: ClassInfo, text: str) -> bool:
    """Does `text` use a stored lambda, a property or a base-class helper of `cls` that mentions a parameter?"""
    key = ("helper-names", cls.name)
    names = index.cache.get(key)
    if names is None:
        found = set(cls.facts.lambdas) if "lambda" in index.class_text(cls) else set()
        for method in cls.all_methods():
            if method.text.lstrip().startswith("@property") and index.mentions_param(method.text):
                found.add(method.name)
            elif "return self." in method.text and index.mentions_param(method.text):
                found.add(method.name)  # may return a submodule's parameter as is (`shared_embedding_weight()`)
        for info in cls.mro:
            for base_index, base in info.external_bases:
                for method in base.all_methods():
                    if method.name not in found and base_index.mentions_param(method.text):
                        found.add(method.name)
        names = index.cache[key] = frozenset(found)
    return any(f"self.{name}" in text for name in names)  # type: ignore[union-attr]


def _mentions_own_param(index: ModelIndex, cls: ClassInfo, text: str) -> bool:
    """Does `text` name `self.<p>` for a parameter `p` the class registers itself (partitioned in an entry method)?"""
    key = ("own-param-names", cls.name)
    names = index.cache.get(key)
    if names is None:  # from the text first: most classes register none, and their `__init__` stays unparsed
        written = {m.group(1) or m.group(2) for info in cls.mro for m in _OWN_PARAM_DEF.finditer(index.class_text(info))}
        names = index.cache[key] = frozenset(n for n in written if n)
    if not any(f"self.{name}" in text for name in names):  # type: ignore[union-attr]
        return False
    return any(
        member.kind == Kind.PARAM and not member.classes and f"self.{name}" in text
        for name, member in cls.facts.members.items()
    )


_OWN_PARAM_DEF = re.compile(
    r"self\.(\w+)\s*(?::[^=\n]*)?=\s*(?:[\w.]*\.)?Parameter(?:List|Dict)?\(|register_parameter\(\s*[\"'](\w+)"
)


def _hands_module(text: str) -> bool:
    return bool(_HANDS_SELF.search(text) or ("for " in text and _HANDS_ALIAS.search(text)))


def _may_access(index: ModelIndex, method: MethodInfo) -> bool:
    """The text pre-filter, once per method for all the rules that share these accesses."""
    cache = method.__dict__
    if "_may_access" not in cache:
        text = method.text
        cache["_may_access"] = index.mentions_param(text) or "parameters(" in text or _reads_related(index, method)
    return cache["_may_access"]


def _reads_related(index: ModelIndex, method: MethodInfo) -> bool:
    """`self.encoder.pos_embedding` in a class holding a module it cannot read: a package parameter name?"""
    text = method.text
    reads = _CHILD_ATTR.findall(text)  # (root, member or "", attr): `self.a.b` or `alias.b`
    if not reads:
        return False
    aliases = dict(_SELF_ALIAS.findall(text))  # `transformer = self.transformer`
    candidates = [(aliases.get(root, member) if root != "self" else member, attr) for root, member, attr in reads
                  if (root == "self" or root in aliases) and not attr.startswith("_")]
    if not candidates:
        return False
    related = index.related_param_names  # read once per file, only now
    candidates = [(m, a) for m, a in candidates if a in related]
    if not candidates:
        return False
    owner = getattr(method, "owner", None)
    members = owner.facts.members if isinstance(owner, ClassInfo) else {}
    return any(
        (member := members.get(m)) is not None and member.kind == Kind.UNKNOWN and not _NOT_A_SUBMODULE.search(m)
        for m, _a in candidates
    )


_CHILD_ATTR = re.compile(r"(?<![\w.])(self|\w+)\.(?:(\w+)\.)?(\w+)")
_SELF_ALIAS = re.compile(r"^\s*(\w+)\s*=\s*self\.(\w+)\s*$", re.M)


def is_persistent(index: ModelIndex, access: Access) -> bool:
    """Is the accessed parameter below the persistence threshold, so ZeRO-3 keeps it gathered everywhere?"""
    return _persistent(index, access)


def _persistent(index: ModelIndex, access: Access) -> bool:
    """Below the persistence threshold: a norm weight, a vector, or a layer whose built size is known small."""
    first = access.first
    if first is not None and first.call is not None and access.owner == f"self.{first.name}" and first.classes:
        last = first.classes[0].rsplit(".", 1)[-1]
        numel = param_numel(last, access.param, first.call, first.env or {})
        if numel is not None and len(first.classes) == 1:
            return numel < index.persistence_threshold
    return _layer_bias(index, access) or _persistent_by_class(index, access)


def _layer_bias(index: ModelIndex, access: Access) -> bool:
    """A bias of a torch layer, or of a module we cannot see: one element per output feature.

    Like `nn.Parameter(torch.zeros(n))` (see `ModelIndex.persistent_param`), a vector of unknown
    length counts as below the threshold; a size known from the constructor call was decided before.
    """
    if not access.param.endswith("bias") or not access.owner_classes:
        return False
    return all(
        ref == UNKNOWN_CLASS or known.is_torch_module_class(ref) or _inherits_torch_param(index, ref, access.param)
        for ref in access.owner_classes
    )


def _persistent_by_class(index: ModelIndex, access: Access) -> bool:
    # Only the classes that have the parameter (`nn.Identity()` in the other branch has none).
    classes = [ref for ref in access.owner_classes if index.member_param(ref, access.param) is not False]
    return bool(classes) and all(index.persistent_param(ref, access.param) for ref in classes)


def _built_before(access: Access, rank: int) -> bool:
    first = access.first
    if first is None or first.kind == Kind.UNKNOWN:
        return True  # passed in, or reached through .parameters(): built earlier
    return first.order < (rank, access.order)


def _runs_gathered(cls: ClassInfo, method: MethodInfo) -> bool:
    """Is `method` a private helper that its class calls only where parameters are gathered?

    `with GatheredParameters(params): self._copy(new, old)` and the `else` of an
    `is_deepspeed_zero3_enabled()` test: a name with a leading underscore is not called
    by a training loop, so those call sites are the only ones.
    """
    name = method.name
    if not name.startswith("_") or name.startswith("__"):
        return False
    pattern = re.compile(r"\bself\." + re.escape(name) + r"\s*\(")
    guarded = []
    for caller in cls.all_methods():
        if caller is method or not pattern.search(caller.text):
            continue
        flat = flat_of(caller)
        if flat is None:
            return False
        for node, ctx in flat.nodes:
            if type(node) is cst.Call and isinstance(node.func, cst.Attribute) and node.func.attr.value == name:
                target = node.func.value
                if isinstance(target, cst.Name) and target.value == "self":
                    guarded.append(ctx.guarded)
    return bool(guarded) and all(guarded)


def _inherits_torch_param(index: ModelIndex, ref: str, name: str, depth: int = 0) -> bool:
    """Does class `ref` (this file or another) get parameter `name` from a torch layer base, unchanged?

    `class Conv2dSame(nn.Conv2d)` has nn.Conv2d's `bias` unless its own `__init__` assigns `self.bias`.
    """
    found = (index, index.classes[ref]) if ref in index.classes else index.external(ref)
    if found is None or depth > 4:
        return False
    owner, info = found
    if re.search(r"\bself\." + re.escape(name) + r"\s*=", "".join(m.text for m in info.init_methods)):
        return False
    for cls in info.mro:
        for base in cls.qualified_bases:
            if known.is_torch_module_class(base) and known.torch_params(base.rsplit(".", 1)[-1], name):
                return True
        for base_index, base_info in cls.external_bases:
            if _inherits_torch_param(base_index, base_info.name, name, depth + 1):
                return True
    return False
