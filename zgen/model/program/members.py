"""What a module class's `__init__` builds on `self`: its members, read with libcst.

`facts(cls)` reads `__init__` and the helpers it calls into `ClassFacts`:
each `self.x = ...` classified as a module, container, parameter, buffer or
value, with the classes it may hold (`nn.X(...)`, classes of this and other
files, builder methods, factory functions, wrappers that return their
argument, `functools.partial`, layer-factory arguments, `Class.from_config()`,
tuple unpacking, `setattr`, containers and their subclasses, modules passed
in). `classify` answers the same question for any expression. Base classes'
members, of this file or another, are merged in. `has_params`,
`member_param` and `member_of` answer about a class by name, following other
files.
"""

from __future__ import annotations

import enum
import functools
import re
from dataclasses import dataclass, field

from . import known
from .class_values import attribute_values, class_lookup, keyed_attribute_values, registry_values
from .given import passed_classes
from .index import ClassInfo, MethodInfo, ModelIndex, memoised
from .size import upper_bound
from .tree import (
    Path, access_path, call_name, chain_root, choice_leaves, code_of, const_str, cst, dotted, parameter_names,
    union_members, walk, walk_own,
)

__all__ = [
    "ACTIVATION", "UNKNOWN_CLASS", "Kind", "Member", "ClassFacts", "facts", "classify", "classify_unpacked", "has_params",
    "member_param", "member_of", "torch_base", "constructors_in", "creates_parameters", "class_named",
    "CONTAINER_ANNOTATIONS",
]

ACTIVATION = "<activation>"  # class of a module from an activation registry (no parameters)
UNKNOWN_CLASS = "<unknown>"  # a member assigned from something we cannot see (an argument)
LIBRARY_LAYER = "<library layer>"  # a module of a library class we cannot read, built in a torch container


def class_named(index: ModelIndex, written: str, resolve: bool = True) -> ClassInfo | None:
    """The class `written` names, of this file or (when `resolve`) another; None for a name not written as classes
    are (`torch.cat`, `F.relu`), torch's own, or one no file we read defines."""
    if not written.rpartition(".")[2][:1].isupper():
        return None
    found = index.classes.get(written)
    if found is None and resolve and not (qualified := index.qualify(written)).startswith("torch."):
        external = index.external(qualified)
        found = external[1] if external is not None else None
    return found


def _annotated_classes(annotation: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The classes an annotation names, `None` left out: `A`, `A | B | None`, `Optional[A]`, `Union[A, B]`; [] when
    any member is not a class (a container, a string, a generic of another kind)."""
    members = [m for m in union_members(annotation) if dotted(m) != "None"]
    return members if all(isinstance(m, (cst.Name, cst.Attribute)) for m in members) else []


def generic_module(ref: str) -> bool:
    """Is `ref` torch's `nn.Module` itself: what an annotation `actor: nn.Module` (`Union[Net, nn.Module]`) names says
    only that the value is a module, of a class the annotation does not tell."""
    return ref.startswith("torch.") and ref.rsplit(".", 1)[-1] == "Module"
_CONSTRUCTOR = re.compile(r"\b([A-Za-z_][\w.]*)\s*\(")


def constructors_in(text: str) -> set[str]:
    """Names called in `text` as written (`nn.Linear`, `Block`, `build`): the candidates for the modules it builds."""
    return set(_CONSTRUCTOR.findall(text))


class Kind(enum.IntEnum):
    """What a `self.<name>` assignment in `__init__` made; higher wins when a name is assigned twice."""

    VALUE = 0  # a plain value: config, int, tensor
    UNKNOWN = 1  # from an argument or expression we cannot classify; may be a module
    BUFFER = 2
    MODULE = 3
    CONTAINER = 4  # ModuleList / ModuleDict / Sequential of `classes`
    PARAM = 5


@dataclass(slots=True)
class Member:
    """One attribute set in `__init__`: what it is, which classes it may hold, and when it was first assigned.

    `order` is (method rank in `init_methods`, pre-order node index): it orders
    an assignment against a use in the same `__init__`; base-class members get rank -1.
    """

    name: str
    kind: Kind
    classes: tuple[str, ...] = ()
    order: tuple[int, int] = (0, 0)
    # The constructor call that built it (when built once, by a call) and the integers then known
    # (`__init__` defaults, locals): what `size.param_numel` bounds its parameters' sizes with.
    call: cst.Call | None = None
    env: dict[str, int] | None = None
    # The name of what built it, when every build called the same (`nn.ParameterList` in both arms of an `if`).
    made_by: str | None = None


@dataclass(slots=True)
class ClassFacts:
    """What a module class's `__init__` (and those of its in-file bases) registers."""

    members: dict[str, Member] = field(default_factory=dict)
    # For ModuleList/ModuleDict subclasses: classes of the modules added to `self`.
    elements: tuple[str, ...] = ()
    # Access paths (`layer1.weight`) passed to `register_external_parameter(self, ...)`.
    external: frozenset[str] = frozenset()
    # `self.a.weight = self.b.weight`: (target path, source path).
    ties: tuple[tuple[str, str], ...] = ()
    # `self.to_logits = lambda t: t @ self.emb.weight.t()`: callables whose body reads members.
    lambdas: dict[str, cst.Lambda] = field(default_factory=dict)
    # `lin = nn.Linear(...); self.w = lin.weight`: a parameter taken from a module built in `__init__`
    # (partitioned under zero.Init once built) -> (the module's local name, its classes, the parameter).
    borrowed: dict[str, tuple[str, tuple[str, ...], str]] = field(default_factory=dict)
    # Members built by calling a class held as a value (`self.act = self.act_class(d)`, `cls = getattr(self,
    # "act_class", None); self.act = cls(d)`) -> the class-valued attribute names, and `=name` for a member it may
    # alias (`... if cri_class else self.act`): typed again by each subclass's family (`class_values`).
    class_built: dict[str, tuple[str, ...]] = field(default_factory=dict)


@memoised(cycle=ClassFacts())
def facts(index: ModelIndex, cls: ClassInfo) -> ClassFacts:
    """What `cls`'s `__init__` (and the helpers it calls, and its bases') registers on `self`."""
    out = ClassFacts()
    for base in reversed(cls.external_bases):
        _merge(out, _global_facts(*base))
    for base in reversed(cls.local_bases):
        _merge(out, facts_of(base))
    if out.class_built:
        _retype(index, cls, out)
    for rank, method in enumerate(cls.init_methods):
        if method.owner is cls or method.owner not in cls.local_bases:
            _FactsReader(index, out, method, rank, cls).read()
    _late_built(index, cls, out)
    _used_as_modules(cls, out)
    _called_parts_of_arguments(cls, out)
    return out


def _called_parts_of_arguments(cls: ClassInfo, out: ClassFacts) -> None:
    """Members bound to a part of a constructor argument named as modules are (`self.word_embeddings =
    embeddings.word_embeddings`, MMF's `ModalEmbeddings` sharing BERT's) that the class calls in a forward
    (`self.word_embeddings(start_token)`): a module of the model it was handed, of a class no file tells."""
    candidates = [
        name for name, member in out.members.items()
        if member.kind == Kind.VALUE and member.call is None and known.module_like_name(name)
    ]
    if not candidates:
        return
    forward_text = "".join(m.text for m in cls.forward_methods)
    candidates = [name for name in candidates if f"self.{name}(" in forward_text]
    if not candidates:
        return
    given = {p for method in cls.init_methods if method.node is not None for p in _all_parameters(method.node)}
    text = "".join(method.text for method in cls.init_methods)
    for name in candidates:
        found = re.search(rf"self\.{re.escape(name)}\s*=\s*(\w+)\.(\w+)\s*$", text, re.M)
        if found and found.group(1) in given and found.group(1) != "self" and known.module_like_name(found.group(2)):
            member = out.members[name]
            member.kind, member.classes = Kind.UNKNOWN, (UNKNOWN_CLASS,)


def _late_built(index: ModelIndex, cls: ClassInfo, out: ClassFacts) -> None:
    """Members a module class builds in a method its framework runs after construction, not its `__init__`
    (MMF's `build()` and the helpers it calls, pix2pixHD's `initialize(opt)`, `setup`, `configure_model`): children
    all the same, of the classes built there. Added only where `__init__` registered nothing by that name, and only
    modules and containers of them."""
    constructing = {id(m) for m in cls.init_methods} | {id(m) for m in cls.forward_methods}
    roots = [m for m in cls.all_methods() if _LATE_BUILDER.fullmatch(m.name) and id(m) not in constructing]
    builders: list[MethodInfo] = []
    for root in roots:  # (and the helpers it calls: MMF's `build()` runs `self._build_output()`)
        for m in cls.reachable(root.name) if root.owner is cls else [root]:
            if id(m) not in constructing and "self." in m.text and "=" in m.text and m not in builders:
                builders.append(m)
    if not builders:
        return
    late = ClassFacts()
    for rank, method in enumerate(builders, start=len(cls.init_methods)):
        _FactsReader(index, late, method, rank, cls).read()
    for name, member in late.members.items():
        if member.kind in (Kind.MODULE, Kind.CONTAINER):  # (a value read there, `self.kwargs.get(k)`, tells nothing)
            out.members.setdefault(name, member)


# Methods a framework runs on a built module to build its children (`build`, `initialize`, `setup`).
_LATE_BUILDER = re.compile(r"_?(?:build|build_model|build_network|initiali[sz]e|setup|setup_model|configure_model)")


def _used_as_modules(cls: ClassInfo, out: ClassFacts) -> None:
    """Members built by a call zgen cannot read (`sam_registry["vit_l"](None).image_encoder.to(d)`, `vit_model(
    pretrained=False)` of an optional import) that the class itself uses as a module: it lists their parameters
    (`self.encoder.parameters()`), reads a weight's values below them
    (`self.encoder.patch_embed.proj.weight.data`), or puts a layer or a parameter into them (`self.encoder.patch_embed
    .proj = nn.Conv2d(...)`). Each is a module of a class zgen cannot read."""
    unread = [
        name for name, member in out.members.items()
        if member.kind == Kind.VALUE and member.call is not None and f"self.{name}." in cls.text
        and not _NOT_A_MODEL_FACTORY.search(code_of(member.call.func))  # (`AutoTokenizer.from_pretrained(p)`)
    ]
    if not unread:
        return
    # (not a part of a model the constructor was handed, `model.get_input_embeddings()`: the caller's, read as such)
    given = {p for method in cls.init_methods if method.node is not None for p in _all_parameters(method.node)}
    roots = {name: chain_root(out.members[name].call) for name in unread}  # type: ignore[arg-type]
    unread = [name for name in unread if not (isinstance(roots[name], cst.Name) and roots[name].value in given)]
    text = cls.text
    for name in unread:
        used = re.search(_MODULE_USE.replace("NAME", re.escape(name)), text) is not None
        if used or _model_state_used(name, out.members[name], text):
            member = out.members[name]
            member.kind, member.classes = Kind.UNKNOWN, (UNKNOWN_CLASS,)


def _model_state_used(name: str, member: Member, text: str) -> bool:
    """`self.model = SwinTransformer(...)` of a library zgen cannot read, named as modules are and built from a class
    named as models are, whose state the class reads or loads (`self.model.load_state_dict(sd)`): a model. (An
    optimizer has a state too, but neither name says module.)"""
    built = (call_name(member.call) or "").rsplit(".", 1)[-1] if member.call is not None else ""
    if not (built[:1].isupper() and known.module_like_name(name) and known.MODULE_WORD.search(built.lower())):
        return False
    return re.search(rf"self\.{re.escape(name)}\.(?:load_)?state_dict\(", text) is not None


def facts_of(cls: ClassInfo) -> ClassFacts:
    """`facts` of a class, in its own file's index."""
    return facts(cls.index, cls)


def classify(
    index: ModelIndex, expr: cst.BaseExpression, resolve: bool = True, cls: ClassInfo | None = None
) -> tuple[Kind, tuple[str, ...]]:
    """What an expression would make if assigned to `self.x` in `__init__` (module, parameter, ...).

    Classes and factory functions imported from other files of the package are read (`self.model = Policy(d)`
    in a plain trainer, `model = build_policy(d)`), unless `resolve` is False: then only this file and torch.
    With `cls`, the class's own builder methods are read too (`model = self.build(cfg)`)."""
    reader = _FactsReader(index, ClassFacts(), None, 0, cls)  # type: ignore[arg-type]
    reader.resolve = resolve
    return reader.classify(expr)


def _module_named(target: cst.BaseExpression) -> bool:
    """Is an assignment target (`model`, `self.model`) named as modules are?"""
    path = access_path(target)
    if path is None or len(path.parts) > 1:
        return False
    return known.module_like_name(path.parts[-1] if path.parts else path.root)


def _loads_model_pair(call: cst.Call) -> bool:
    """`clip.load(name)`: a package's `load` unpacked into several names, not a file reader's (`torch.load`,
    `json.load`), which hands back one object."""
    name = call_name(call) or ""
    root, _, last = name.partition(".")
    return last == "load" and root not in known.FILE_READERS


def classify_unpacked(
    index: ModelIndex, call: cst.Call, n: int, cls: ClassInfo | None = None
) -> list[tuple[Kind, tuple[str, ...]]]:
    """What a call of a function (or of a method of `cls`) returning an `n`-tuple makes, element by element
    (`net, opt = make_pair(cfg)`); [] when it cannot be read."""
    return _FactsReader(index, ClassFacts(), None, 0, cls)._returned_tuple(call, n)  # type: ignore[arg-type]


def returns(
    index: ModelIndex, function: MethodInfo, call: cst.Call, caller: _FactsReader
) -> tuple[Kind, tuple[str, ...]]:
    """What `call` of a factory function or builder method returns: a module and its classes, or a value.

    The function's `return` values are classified with what its body bound
    (`m = nn.Linear(...); nn.init.normal_(m.weight); return m`); returning one of
    its parameters returns the caller's argument (`quant_noise(module, p)`).
    """
    kind, classes, handed = _returned_by(index, function)
    if handed:
        # `default(mel_spec, MelSpec())` of `def default(v, d): return v if exists(v) else d`: one of the arguments
        args = [_argument(call, *param) for param in handed]
        return caller.either([arg for arg in args if arg is not None])
    return kind, tuple(index.global_name(c) for c in classes) if caller.index is not index else classes


@memoised(cycle=[])
def returns_tuple(index: ModelIndex, function: MethodInfo, n: int) -> list[tuple[Kind, tuple[str, ...]]]:
    """Kinds and classes of the elements of `return a, b` in `function`, if it returns an n-tuple."""
    node = function.node
    if node is None or "return" not in function.text:
        return []
    reader = _FactsReader(index, ClassFacts(), function, 0, function.owner)
    reader.read()
    for stmt in walk(node.body):
        if isinstance(stmt, cst.Return) and isinstance(stmt.value, cst.Tuple) and len(stmt.value.elements) == n:
            out = []
            for element in stmt.value.elements:
                kind, classes = reader.classify(element.value)
                out.append((kind, classes))
            if any(kind != Kind.VALUE for kind, _ in out) or not _all_names(stmt.value):
                return out
            # `model, tokenizer, meta = build_model(d)` ... `return model, tokenizer, meta`: what that call makes
            return _unpacked_call(reader, node, stmt.value, n) or out
        if isinstance(stmt, cst.Return) and isinstance(stmt.value, cst.Call):
            out = reader._returned_tuple(stmt.value, n)  # `return load_from_dir(path, *args)`: what it returns
            if out:
                return out
    return []


def _all_names(returned: cst.Tuple) -> bool:
    """Is every element of the returned tuple a plain name?"""
    return all(isinstance(e.value, cst.Name) for e in returned.elements)


def _unpacked_call(
    reader: _FactsReader, node: cst.FunctionDef, returned: cst.Tuple, n: int
) -> list[tuple[Kind, tuple[str, ...]]]:
    """The elements of a returned tuple of names bound together by unpacking one call of a function that returns an
    `n`-tuple (`model, tok, meta = build_model(d)` ... `return model, tok, meta`), as that function returns them."""
    names = [e.value.value for e in returned.elements]  # type: ignore[attr-defined]
    for stmt in walk(node.body):
        if not (isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and isinstance(stmt.value, cst.Call)):
            continue
        target = stmt.targets[0].target
        if isinstance(target, (cst.Tuple, cst.List)) and [
            e.value.value if isinstance(e.value, cst.Name) else None for e in target.elements
        ] == names:
            return reader._returned_tuple(stmt.value, n)
    return []


@memoised(cycle=(Kind.VALUE, (), ()))
def _returned_by(
    index: ModelIndex, function: MethodInfo
) -> tuple[Kind, tuple[str, ...], tuple[tuple[int, str], ...]]:
    """What `function` returns: a kind and classes, or the parameters it hands back as given (`return module`;
    `return v if exists(v) else d`, a choice among them: each a (position, name) the caller's argument fills)."""
    node = function.node
    if node is None or not function.text.count("return"):
        return Kind.VALUE, (), ()
    reader = _FactsReader(index, ClassFacts(), function, 0, function.owner)
    reader.read()
    kind, classes = Kind.VALUE, ()
    handed_back: tuple[tuple[int, str], ...] = ()  # the first `return` handing back arguments as given
    unread = False  # a `return` of what no class tells (`_FACTORIES[kind](d)`)
    for stmt in walk_own(node.body):  # (not a nested function's: `return subnet` hands back a factory)
        if not isinstance(stmt, cst.Return) or stmt.value is None:
            continue
        value = stmt.value
        handed = tuple(
            (reader.params.index(leaf.value) - (function.owner is not None), leaf.value)  # (less `self`)
            for leaf in choice_leaves(value)
            if isinstance(leaf, cst.Name) and leaf.value in reader.params
            and (leaf.value not in reader.locals or _passed_through(reader, node, leaf.value))
        )
        if handed and len(handed) == len(choice_leaves(value)):
            handed_back = handed_back or handed
            continue
        k, c = reader.classify(value)
        unread = unread or (k == Kind.VALUE and not c) or (k == Kind.UNKNOWN and c == (UNKNOWN_CLASS,))
        if k > kind or (k == kind and c):
            kind, classes = max(k, kind), classes + tuple(x for x in c if x not in classes)
    if handed_back and kind == Kind.MODULE and classes and UNKNOWN_CLASS not in classes:
        # `return model` if it is built already, else `return AdditionModel(**model)`: a model either way, of a
        # class the caller's argument decides in one branch (not a tuple padded out from the argument's items)
        return kind, classes + (UNKNOWN_CLASS,), ()
    if handed_back:
        return Kind.VALUE, (), handed_back
    if unread and kind == Kind.VALUE and function.span.name in known.MODEL_BUILDERS:
        # `def build_model(args): return MODULE_BUILD_FUNCS.get(args.modelname)(args)`: a model factory, named as
        # the libraries' are, returning what a registry holds: a model of a class no file tells
        return Kind.UNKNOWN, (UNKNOWN_CLASS,), ()
    if unread and isinstance(node, cst.FunctionDef) and node.returns is not None \
            and kind in (Kind.VALUE, Kind.UNKNOWN, Kind.MODULE):
        # `def get_linear(...) -> nn.Module: return _FACTORIES[kind](...)`: what a registry builds, typed a module
        typed, named, _ = _annotated_return(reader, node.returns.annotation)
        if typed == Kind.MODULE:
            return typed, classes + tuple(c for c in named if c not in classes), ()
    return kind, classes, ()


def _annotated_return(
    reader: _FactsReader, annotation: cst.BaseExpression
) -> tuple[Kind, tuple[str, ...], tuple[tuple[int, str], ...]]:
    """What a return annotation says a function builds: a module of the one class it names (`nn.Module`: of no class
    it tells), or a value when it names no module or several classes (`-> Union[Calculator, nn.Module]`: a choice the
    arguments make)."""
    named = _annotated_classes(annotation)
    if len(named) != 1:
        return Kind.VALUE, (), ()
    found: list[str] = []
    for each in named:
        kind, classes = reader.classify(cst.Call(func=each))
        if kind != Kind.MODULE or not classes:
            return Kind.VALUE, (), ()
        found += [UNKNOWN_CLASS if generic_module(c) else c for c in classes]
    return (Kind.MODULE, tuple(dict.fromkeys(found)), ()) if found else (Kind.VALUE, (), ())


def _passed_through(reader: _FactsReader, function: cst.FunctionDef, name: str) -> bool:
    """Is argument `name` rebound only to what calls handed it make of it (`module =
    compilable(fabric.setup_module(module))`, each call given it, or the call given it, first)? The argument handed
    back, or what an unreadable wrapper makes of it: the caller's module. Not a module class of the program built
    around it (`DEFuncBase(vector_field)`): that class is what the function hands back."""
    bound = False
    for node in walk(function.body):
        if isinstance(node, (cst.For, cst.CompFor, cst.WithItem, cst.AugAssign, cst.AnnAssign, cst.NamedExpr)):
            target = node.asname.name if isinstance(node, cst.WithItem) and node.asname is not None else getattr(node, "target", None)
            if target is not None and any(isinstance(n, cst.Name) and n.value == name for n in walk(target)):
                return False
        if not isinstance(node, cst.Assign):
            continue
        if not any(isinstance(n, cst.Name) and n.value == name for t in node.targets for n in walk(t.target)):
            continue
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name):
            return False
        value = node.value
        while isinstance(value, cst.Call):
            first = next((a.value for a in value.args if a.keyword is None and not a.star), None)
            if first is None:
                return False
            value = first
        if not isinstance(value, cst.Name) or value.value != name or node.value is value:
            return False
        kind, classes = reader.classify(node.value)
        if kind in (Kind.MODULE, Kind.CONTAINER) and classes and UNKNOWN_CLASS not in classes:
            return False  # a module class built around it
        bound = True
    return bound


def _does_nothing(index: ModelIndex, ref: str) -> bool:
    """`nn.Identity`, or a module class of the program whose forward hands back its input as given: a placeholder
    for no module (`skip if skip else nn.Identity()`), not a default standing for what a caller may hand in."""
    if ref.rsplit(".", 1)[-1] == "Identity" and known.is_torch_module_class(ref):
        return True
    local = index.classes.get(ref)
    found = (index, local) if local is not None else index.external(ref)
    forward = found[1].method("forward") if found is not None else None
    node = forward.node if forward is not None else None
    if node is None or len(node.params.params) < 2 or len(node.body.body) != 1:
        return False
    stmt = node.body.body[0]
    returned = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    return (
        isinstance(returned, cst.Return) and isinstance(returned.value, cst.Name)
        and returned.value.value == node.params.params[1].name.value
    )


@memoised(cycle=False)
def _local_has_params_memo(index: ModelIndex, ref: str) -> bool | None:
    return _local_has_params(index, index.classes[ref])


@memoised
def creates_parameters(index: ModelIndex, cls: ClassInfo) -> bool:
    """Does `cls`'s `__init__` (or a helper it calls) create a parameter (`nn.Parameter(...)`, a `ParameterList`,
    `register_parameter`), however it is stored? Methods whose text names none are not parsed."""
    for method in cls.init_methods:
        node = method.node if "Parameter" in method.text or "register_parameter" in method.text else None
        if node is not None and any(isinstance(n, cst.Call) and _creates_parameter(call_name(n)) for n in walk(node)):
            return True
    return False


def parameter_container(index: ModelIndex, cls: ClassInfo, name: str) -> bool:
    """Is member `name` of `cls` a `ParameterList`/`ParameterDict` (built by the class or an in-file base)? A child
    module of its own, with hooks of its own (which run only if it is called, never in practice): its parameters
    are no parameters of the class holding it."""
    built = _built_as(index, cls, name)
    if built is None or built not in _PARAM_CONTAINERS:
        return False
    member = facts_of(cls).members.get(name)  # (not one of modules: `nn.ParameterDict({v: nn.Linear(2, 1) ...})`)
    return member is None or member.kind != Kind.CONTAINER or not member.classes


def parameter_dict(index: ModelIndex, cls: ClassInfo, name: str) -> bool:
    """Is member `name` of `cls` a `ParameterDict`, or a module container of them? Iterating one yields its keys."""
    built = _built_as(index, cls, name)
    if built is not None:
        return built == "ParameterDict"
    return holds_parameter_containers(cls, name) and all(
        ref.rsplit(".", 1)[-1] == "ParameterDict" for ref in facts_of(cls).members[name].classes
    )


def _built_as(index: ModelIndex, cls: ClassInfo, name: str) -> str | None:
    """The last name of what the call building member `name` calls (`ParameterDict`), in the class or the in-file
    base that built it (a base's members are merged without their calls: the class that built it has it)."""
    for owner in cls.mro:
        member = facts_of(owner).members.get(name)
        called = member.made_by if member is not None else None
        if called:
            return index.qualify(called).rsplit(".", 1)[-1]
    return None


def holds_parameter_containers(cls: ClassInfo, name: str) -> bool:
    """Is member `name` of `cls` a module container whose items are all `ParameterList`s/`ParameterDict`s
    (`self.transform[k] = nn.ParameterDict(...)` in a `ModuleDict`)? Each item is a module never called."""
    member = facts_of(cls).members.get(name)
    return (
        member is not None and member.kind == Kind.CONTAINER and bool(member.classes)
        and all(ref.rsplit(".", 1)[-1] in _PARAM_CONTAINERS for ref in member.classes)
    )


def _creates_parameter(name: str | None) -> bool:
    last = (name or "").rsplit(".", 1)[-1]
    return last.endswith("Parameter") or last in {"ParameterList", "ParameterDict", "register_parameter"}


def has_params(index: ModelIndex, ref: str) -> bool | None:
    """Does a module of class `ref` own parameters (itself or below)? None: cannot tell.

    A class's own parameters are read from its `__init__` (and what it calls),
    parsed only when its text creates one; its children from the constructor
    calls in that text, following classes of this file and of others.
    """
    if ref == ACTIVATION:
        return False
    if ref == UNKNOWN_CLASS or ref == LIBRARY_LAYER:
        return None
    if ref in index.classes:
        return _local_has_params_memo(index, ref)
    answer = known.torch_has_params(ref)
    if answer is None:
        external = index.external(ref)
        if external is not None:
            return has_params(external[0], external[1].name)
    return answer


# A layer class handed as a value, not called: `super().__init__(nn.Linear, **kwargs)`, `block=nn.Conv2d`.
_HANDED_CLASS = re.compile(r"[(,=]\s*((?:torch\.)?nn\.[A-Z]\w*)\s*[,)]")
_CLASS_TESTS = ("isinstance(", "issubclass(", "type(")


def _hands_a_layer_class(index: ModelIndex, text: str) -> bool:
    """Does `__init__` hand a torch layer class with parameters to a call or a keyword (`super().__init__(nn.Linear,
    **kwargs)`, a base building its layers with the class it is given), not only test a module's class
    (`isinstance(m, nn.Linear)`)? The layers it builds with it have parameters."""
    if "nn." not in text:
        return False
    for match in _HANDED_CLASS.finditer(text):
        line = text[text.rfind("\n", 0, match.start()) + 1:match.start()]
        if any(test in line for test in _CLASS_TESTS):
            continue
        if known.torch_has_params(index.qualify(match.group(1))):
            return True
    return False


def torch_base(cls: ClassInfo) -> str | None:
    """The last name of a torch.nn layer class that `cls` (or an in-file base) derives from (`Embedding`)."""
    for info in cls.mro:
        for base in info.qualified_bases:
            last = base.rsplit(".", 1)[-1]
            if known.is_torch_module_class(base) and last in known.TORCH_PARAMS:
                return last
    return None


def _local_has_params(index: ModelIndex, cls: ClassInfo) -> bool | None:
    if not cls.is_module:
        return False
    if torch_base(cls) is not None:
        return True  # `class ScaledEmbedding(nn.Embedding)`: the base registers the weight
    if creates_parameters(index, cls):
        return True
    text = "".join(method.text for method in cls.init_methods)
    answers: list[bool | None] = []
    for written in constructors_in(text):
        if written in index.classes:
            if index.classes[written].is_module:
                answers.append(has_params(index, written))
            continue
        qualified = index.qualify(written)
        last = qualified.rsplit(".", 1)[-1]
        if last in known.ACTIVATION_FACTORIES or not last[:1].isupper():
            continue
        if known.is_torch_module_class(qualified) or last in known.TORCH_PARAMS:
            answer = known.torch_has_params(qualified)
            if answer is not None:
                answers.append(answer)
        elif index.is_module_base(qualified):
            answers.append(has_params(index, qualified) if index.external(qualified) else None)
    if not text:
        # no constructor of its own or of an in-file base (`class DeepLabV3(_SimpleSegmentationModel): pass`): what the
        # base of another file builds, or is handed, is its
        answers += [has_params(other, base.name) for other, base in cls.external_bases if base.is_module]
    if True in answers or _hands_a_layer_class(index, text):
        return True
    if None in answers or _holds_given_module(index, cls):
        return None  # `self.net = net`: a wrapper around a module handed in, whose parameters we cannot see
    members = facts(index, cls).members.values()
    if any(member.kind == Kind.CONTAINER and LIBRARY_LAYER in member.classes for member in members):
        return None  # `nn.Sequential(ConvModule(...))`: a library's layers we cannot read
    if any(_built_by_model_builder(member) for member in members):
        return None  # `self.diffusion_model = instantiate_from_config(cfg)`: a model of a class no file tells
    # `self.score = tower()` for a function building `nn.Sequential(nn.Linear(d, d), ...)`: children a factory built
    # (`self.project_in = build_block(...)`, a function of the program returning a module of a class it does not
    # show: cannot tell; not a layer class the constructor was handed, `layer(d, d)`, which the subclass names)
    built = [
        has_params(index, c) if c != UNKNOWN_CLASS else None if _factory_built(index, member) else False
        for member in members if member.kind in (Kind.MODULE, Kind.CONTAINER) for c in member.classes if c != cls.name
    ]
    return True if True in built else None if None in built else False


def _factory_built(index: ModelIndex, member: Member) -> bool:
    """Was `member` built by a call of a function of the program (`build_block(...)`, of this file or another), not
    of a class or callable the constructor was handed?"""
    name = call_name(member.call) if member.call is not None else None
    if not name or name.startswith((".", "self.")):
        return False
    if "." not in name and name in index.skeleton.functions:
        return True
    return index.external_function(index.qualify(name)) is not None


def _built_by_model_builder(member: Member) -> bool:
    """Is the member what a function named as a model builder made, of a kind we cannot tell
    (`instantiate_from_config(cfg)`, `build_model(cfg)`)?"""
    called = call_name(member.call) if member.kind == Kind.UNKNOWN and member.call is not None else None
    return called is not None and called.rsplit(".", 1)[-1] in known.MODEL_BUILDERS


def _holds_given_module(index: ModelIndex, cls: ClassInfo) -> bool:
    """Does the constructor store a module it was handed: a member that is a module no call of it built, one of a
    kind we cannot tell that `forward` runs as a submodule (`self.net = net` ... `self.net(x)`), or a container of
    modules of classes it cannot tell?"""
    if not any("self." in method.text for method in cls.init_methods):
        return False
    forward = "".join(method.text for method in cls.forward_methods)
    for member in facts(index, cls).members.values():
        if member.kind == Kind.CONTAINER and UNKNOWN_CLASS in member.classes:
            return True  # `self.models = nn.ModuleList(models)`: a container of the modules it was handed
        if member.call is not None and not (_handed_on_as_is(member.call) or _chosen_class_built(member)) \
                or member.kind not in (Kind.MODULE, Kind.UNKNOWN):
            continue
        if member.kind == Kind.MODULE and member.classes and all(has_params(index, c) is False for c in member.classes):
            continue  # handed a module of a class known to own none (`align: WeightedRigidAlign`)
        if member.kind == Kind.MODULE or re.search(r"self(?<!\wself)\." + re.escape(member.name) + r"\(", forward):
            return True
    return bool(_given_generic_modules(index, cls))


def _given_generic_modules(index: ModelIndex, cls: ClassInfo) -> set[str]:
    """Members the constructor stores straight from an argument annotated as a module of no class it names
    (`def __init__(self, model: nn.Module)` ... `self.policy_model = model`): a module handed in, whose
    parameters we cannot see, however the class uses it (called, or handed to a function)."""
    found: set[str] = set()
    for method in cls.init_methods:
        if method.name != "__init__" or "Module" not in method.text:
            continue  # (an annotation naming `nn.Module` is in the text; the cheap test first)
        node = method.node
        if node is None:
            continue
        params = node.params
        generic = {
            p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)
            if p.annotation is not None and generic_module(index.qualify(dotted(p.annotation.annotation) or ""))
        }
        if not generic:
            continue
        for stmt in walk(node.body):
            if isinstance(stmt, cst.Assign) and isinstance(stmt.value, cst.Name) and stmt.value.value in generic:
                for target in stmt.targets:
                    name = dotted(target.target) or ""
                    if name.startswith("self.") and name.count(".") == 1:
                        found.add(name[5:])
    return found


def _chosen_class_built(member: Member) -> bool:
    """`self.base_model = get_model_trunk(name)(config, name)`, `TRUNKS[name](config)`: a class of no kind we can tell,
    looked up by a call or a key and built with settings (`_given_settings`)."""
    call = member.call
    return (
        member.kind == Kind.UNKNOWN and call is not None and isinstance(call.func, (cst.Call, cst.Subscript))
        and _given_settings(call)
    )


def _given_settings(call: cst.Call) -> bool:
    """Is `call` given settings: a positional argument (a layer's sizes, a configuration) or several keywords
    (`globals()[model_type](img_resolution=r, in_channels=c)`), not nothing or a flag alone (an activation chosen by
    name: `get_act(name)(inplace=True)`)?"""
    return any(arg.keyword is None and not arg.star for arg in call.args) or sum(
        arg.keyword is not None for arg in call.args) >= 2


def _handed_on_as_is(call: cst.Call) -> bool:
    """`net.to(dtype=d)`, `net.cuda()`: a name's own module, moved or flagged, not a construction."""
    func = call.func
    return isinstance(func, cst.Attribute) and func.attr.value in _RETURNS_SELF and isinstance(func.value, cst.Name)


def member_param(index: ModelIndex, ref: str, name: str) -> bool | None:
    """Is `name` a parameter registered directly on a module of class `ref`? None: cannot tell."""
    local = index.classes.get(ref)
    if local is not None:
        member = facts(index, local).members.get(name)
        if member is None:
            base = torch_base(local)
            return base is not None and known.torch_params(base, name)
        return member.kind == Kind.PARAM
    external = index.external(ref)
    if external is not None:
        return member_param(external[0], external[1].name, name)
    last = ref.rsplit(".", 1)[-1]
    if ref.startswith("torch.nn.") or last in known.TORCH_PARAMS:
        return known.torch_params(last, name)
    if ref == ACTIVATION:
        return False
    return None


def member_of(index: ModelIndex, ref: str, name: str) -> Member | None:
    """The member `name` of class `ref` when the class is in this file (or a known torch child)."""
    local = index.classes.get(ref)
    if local is not None:
        return facts(index, local).members.get(name)
    external = index.external(ref)
    if external is not None:
        found = member_of(external[0], external[1].name, name)
        if found is None:
            return None
        classes = tuple(external[0].global_name(c) for c in found.classes)
        return Member(found.name, found.kind, classes, (-1, 0))
    last = ref.rsplit(".", 1)[-1]
    if last == "MultiheadAttention" and name == "out_proj":
        return Member(name, Kind.MODULE, ("torch.nn.Linear",))
    return None



def _argument(call: cst.Call, position: int, name: str) -> cst.BaseExpression | None:
    """The argument a call passes for a parameter (by keyword, else by position)."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[position].value if 0 <= position < len(positional) else None


def _global_facts(index: ModelIndex, cls: ClassInfo) -> ClassFacts:
    """The facts of another file's class, with its class references made absolute."""
    read = facts(index, cls)
    out = ClassFacts(elements=tuple(index.global_name(c) for c in read.elements), external=read.external,
                     ties=read.ties, lambdas=dict(read.lambdas), class_built=dict(read.class_built))
    for name, member in read.members.items():
        out.members[name] = Member(name, member.kind, tuple(index.global_name(c) for c in member.classes), member.order)
    return out


def _retype(index: ModelIndex, cls: ClassInfo, out: ClassFacts) -> None:
    """Members a base built from a class held as a value, typed by the classes `cls`'s family assigns to it (the
    base's own file may not know them: a subclass sets `self.act_class = QNet` before calling the base's
    `__init__`); aliases after the members they alias."""
    reader = _FactsReader(index, out, None, -1, cls)  # type: ignore[arg-type]
    for alias_pass in (False, True):
        for name, lookups in out.class_built.items():
            member = out.members.get(name)
            if member is None or member.kind >= Kind.MODULE and UNKNOWN_CLASS not in member.classes:
                continue
            classes: tuple[str, ...] = ()
            for lookup in lookups:
                if lookup.startswith("="):
                    if alias_pass:
                        other = out.members.get(lookup[1:])
                        if other is not None and other.kind in (Kind.MODULE, Kind.CONTAINER):
                            classes += other.classes
                else:
                    made = reader.class_values(lookup)
                    classes += made[1] if made is not None else ()
            classes = tuple(c for c in dict.fromkeys(classes) if c != UNKNOWN_CLASS)
            if classes:
                member.kind, member.classes = Kind.MODULE, classes


def _all_parameters(func: cst.FunctionDef) -> set[str]:
    """Every name `func` binds its arguments to, `*args` and `**kwargs` among them."""
    names = set(parameter_names(func))
    for star in (func.params.star_arg, func.params.star_kwarg):
        if isinstance(star, cst.Param):
            names.add(star.name.value)
    return names


def _restated(value: cst.BaseExpression, name: str) -> bool:
    """Is `value` `cast(T, self.<name>)`: the member itself, its class stated (a subclass narrowing its base's)?"""
    if not (isinstance(value, cst.Call) and len(value.args) == 2 and (call_name(value) or "").endswith("cast")):
        return False
    held = access_path(value.args[1].value)
    return held is not None and held.root == "self" and held.parts == (name,)


def _merge(into: ClassFacts, base: ClassFacts) -> None:
    for name, member in base.members.items():
        into.members[name] = Member(member.name, member.kind, member.classes, (-1, member.order[1]))
    into.elements += base.elements
    into.external |= base.external
    into.ties += base.ties
    for name, body in base.lambdas.items():
        into.lambdas.setdefault(name, body)
    for name, lookups in base.class_built.items():
        into.class_built[name] = into.class_built.get(name, ()) + lookups


_CONTAINERS = {"ModuleList", "ModuleDict", "Sequential"}
# Displays of values, by node type name (libcst is loaded on first use): a list, a tuple or a comprehension.
_DISPLAYS = ("List", "Tuple", "ListComp", "GeneratorExp")
_PARAM_CONTAINERS = {"ParameterList", "ParameterDict"}


@functools.cache
def _small_statement(kind: type) -> bool:
    """Is a node of this type a simple statement (an assignment, an expression, a `return`)? (Asked of every node of
    the methods read: by type, once, not through the ABC check of `isinstance`.)"""
    return issubclass(kind, cst.BaseSmallStatement)


class _FactsReader:
    """Reads one `__init__`-reachable method into `ClassFacts`."""

    def __init__(
        self, index: ModelIndex, facts: ClassFacts, method: MethodInfo, rank: int, cls: ClassInfo | None = None
    ) -> None:
        self.index = index
        self.rank = rank
        self.facts = facts
        self.method = method
        self.cls = cls if cls is not None else getattr(method, "owner", None)
        # Locals bound to something we classified (`layer = Block(c)`, `layers.append(Block(c))`).
        self.locals: dict[str, tuple[Kind, tuple[str, ...]]] = {}
        # Names that build a module when called: `linear = partial(nn.Linear, bias=False)`,
        # a parameter with a class default (`norm_layer=nn.LayerNorm`).
        self.callables: dict[str, cst.BaseExpression] = {}
        # Parameters of the method, in order: a factory that returns one returns its argument.
        self.params: list[str] = []
        self.layer_params: set[str] = set()  # parameters named like layer factories (`norm_layer`)
        self.model_params: set[str] = set()  # parameters named like a network's constructor (`base_encoder`)
        self.literal_params: set[str] = set()  # parameters defaulting to a string or a number (`aggregate="sum"`)
        self.env: dict[str, int] = {}  # upper bounds of integer parameters and locals (`hd=256`)
        self._unbounded: set[str] = set()
        self._reassigned: set[str] = set()  # attributes bounded in `env` that another method of the class sets too
        self._clamps: set[int] = set()  # targets of `if n > limit: n = limit`
        self._depth = 0  # nesting of callables followed (`a = partial(b)`, `b = partial(a)`)
        self.resolve = True  # read other files for imported classes and factory functions
        # Locals bound to the class of a module (`layer_type = type(self.base)`) -> what calling them builds.
        self.module_types: dict[str, tuple[Kind, tuple[str, ...]]] = {}
        # Locals bound to a class-valued attribute (`cls = getattr(self, "act_class", None)`) -> its name.
        self.class_locals: dict[str, str] = {}

    def read(self) -> None:
        node = self.method.node
        if node is None:
            return
        self._parameters(node)
        # One pre-order walk numbers the method's nodes (`MethodInfo.order`, kept for the method) and reads the
        # statements of its body, the last of a `def`'s parts.
        known = self.method.__dict__.get("order")
        order: dict[int, int] = {} if known is None else known
        body, in_body = node.body, False
        for at, stmt in enumerate(walk(node)):
            if known is None:
                order[id(stmt)] = at
            if not in_body:
                in_body = stmt is body
                continue
            if type(stmt) is cst.If:  # a leaf node type: no ABC check for every other statement
                self._clamps.update(_clamp_assigns(stmt))
            elif _small_statement(type(stmt)):
                self._statement(stmt, (self.rank, order[id(stmt)]))
        self.method.__dict__.setdefault("order", order)

    def _parameters(self, node: cst.FunctionDef) -> None:
        params = node.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            name = param.name.value
            self.params.append(name)
            default = param.default
            if isinstance(default, (cst.Name, cst.Attribute)) and dotted(default) not in (None, "None"):
                self.callables[name] = default
            elif isinstance(default, cst.Call) and _is_partial(default):
                self.callables[name] = default
            if default is None and param.annotation is None and _MODEL_CONSTRUCTOR_PARAM.search(name):
                self.model_params.add(name)  # `base_encoder`: a network's constructor handed in, called to build it
            if _LAYER_PARAM.search(name):
                self.layer_params.add(name)
            elif param.annotation is not None and self._annotated_container(name, param.annotation.annotation):
                pass
            elif default is None and self.method.name == "__init__" and getattr(self.method, "owner", None) is self.cls:
                self._given(name, len(self.params) - 2)
            if isinstance(default, (cst.SimpleString, cst.ConcatenatedString, cst.Integer, cst.Float)):
                self.literal_params.add(name)
            if isinstance(default, cst.Integer):
                self.env[name] = int(default.evaluated_value)
            elif _negative_literal(default):  # `groups=-1`: a sentinel meaning "choose for me"
                self.env[name] = -int(default.expression.evaluated_value)  # type: ignore[union-attr]

    def _bound_attribute(self, name: str, value: cst.BaseExpression) -> None:
        """`self.inplanes = 64` before `nn.Conv3d(3, self.inplanes, ...)`: an upper bound of an integer attribute, as
        `self.<name>` in `env`, until the class sets it again (here, or in a method of `self` called later: an
        attribute other methods set too is forgotten at the first such call)."""
        bound = upper_bound(value, self.env)
        if bound is None or self.cls is None:
            self.env.pop(f"self.{name}", None)
            return
        self.env[f"self.{name}"] = bound
        if len(re.findall(rf"\bself\.{re.escape(name)}\s*(?:[-+*/|&]|//|\*\*)?=(?!=)", self.cls.text)) > 1:
            self._reassigned.add(name)  # (`self.inplanes = planes * 4` in `_make_layer`: unknown once it is called)

    def _forget_reassigned(self, node: cst.CSTNode) -> None:
        """A call of a method of `self` may set again an attribute bounded in `env` (`self._make_layer(...)`)."""
        if any(type(n) is cst.Call and isinstance(n.func, cst.Attribute) and _is_self(n.func.value)
               for n in walk(node)):
            for name in self._reassigned:
                self.env.pop(f"self.{name}", None)
            self._reassigned.clear()

    def _given(self, name: str, position: int) -> None:
        """`def __init__(self, fn, p)` of a class this file builds only as `RandomApply(T.ColorJitter(...), p=0.3)`:
        the argument is a module of the classes passed, when every one of them is known to own no parameters."""
        if position < 0 or _LAYER_PARAM.search(name):
            return
        text = self.method.text
        held = re.search(rf"^\s*self\.(\w+)\s*=\s*{re.escape(name)}\s*$", text, re.M)
        if held is None or f"self.{held.group(1)}(" not in self.cls.text:
            return  # kept but never called: what it holds decides no call
        classes = passed_classes(self.index, self.cls.name, name, position)
        if classes and all(has_params(self.index, ref) is False for ref in classes):
            self.locals[name] = (Kind.MODULE, classes)

    def _annotated_container(self, name: str, annotation: cst.BaseExpression) -> bool:
        """`policies: dict[str, Policy]`, `List[nn.Module]`: an argument holding modules of a module class. Is the
        annotation a container's (else what the callers pass decides, as for an argument without one)?"""
        if not (isinstance(annotation, cst.Subscript) and (dotted(annotation.value) or "").rsplit(".", 1)[-1] in CONTAINER_ANNOTATIONS):
            self._annotated_module(name, annotation)
            return False
        element = annotation.slice[-1].slice
        if not isinstance(element, cst.Index) or not isinstance(element.value, (cst.Name, cst.Attribute)):
            return True
        kind, classes = self.classify(cst.Call(func=element.value))
        if kind == Kind.MODULE:
            # an annotation names a base class: the modules passed may be subclasses that own parameters
            known_params = all(has_params(self.index, ref) for ref in classes)
            self.locals[name] = (Kind.CONTAINER, classes if known_params else (UNKNOWN_CLASS,))
        return True

    def _annotated_module(self, name: str, annotation: cst.BaseExpression) -> None:
        """`align: WeightedRigidAlign` naming a module class of this file that owns no parameters and that no class
        of the file derives from: the argument is such a module (it all-gathers nothing when called). An annotation
        naming module classes of the program that own parameters (`logF: ScalarEstimator | None`, `Optional[Net]`,
        from any file) makes the argument a module of those classes: it all-gathers when called, handed on or not.
        A class named may be a base of the one passed, which owns at least what the base owns."""
        written = dotted(annotation)
        cls = self.index.classes.get(written) if written is not None else None
        if cls is not None and cls.is_module and has_params(self.index, cls.name) is False:
            if not any(cls in other.local_bases for other in self.index.classes.values()):
                self.locals[name] = (Kind.MODULE, (cls.name,))
            return  # (a subclass passed in may own parameters)
        named = _annotated_classes(annotation)
        if not named or self.method.name != "__init__":
            return
        found: list[str] = []
        for each in named:
            kind, classes = self.classify(cst.Call(func=each))
            if kind != Kind.MODULE or not classes or any(generic_module(c) for c in classes):
                return
            found += classes
        if all(has_params(self.index, c) is False for c in found):
            return  # (modules that own nothing, read above only when the file's own and no base of another)
        self.locals[name] = (Kind.MODULE, tuple(dict.fromkeys(found)))

    def _statement(self, node: cst.CSTNode, order: tuple[int, int]) -> None:
        if self._reassigned:
            self._forget_reassigned(node)
        if isinstance(node, cst.Assign):
            for target in node.targets:
                self._assign(target.target, node.value, order)
        elif isinstance(node, cst.AnnAssign) and node.value is not None:
            self._assign(node.target, node.value, order)
            self._annotated_member(node.target, node.annotation.annotation)
        elif isinstance(node, cst.Expr) and isinstance(node.value, cst.Call):
            self._call(node.value, order)
        elif isinstance(node, cst.Assert):
            self._asserted(node.test)

    def _annotated_member(self, target: cst.BaseExpression, annotation: cst.BaseExpression) -> None:
        """`self.critic: Critic = make_critic(cfg)`: a member built by code we cannot read, annotated with a module
        class of the program or torch, is a module."""
        path = access_path(target)
        if path is None or path.root != "self" or len(path.parts) != 1 or self.cls is None:
            return
        member = self.facts.members.get(path.parts[0])
        if member is None or member.kind != Kind.VALUE or not isinstance(annotation, (cst.Name, cst.Attribute)):
            return
        kind, classes = self.classify(cst.Call(func=annotation))
        if kind == Kind.MODULE and classes and not any(generic_module(c) for c in classes):
            # (`nn.Module` tells nothing of what was built; a named class does, though as a base: the module built
            # may be any subclass of it, `instances` reads which)
            member.kind, member.classes = kind, (UNKNOWN_CLASS,)

    def _asserted(self, test: cst.BaseExpression) -> None:
        """`assert isinstance(vit, ViT)`: from here on the argument is a module of that class."""
        if not (isinstance(test, cst.Call) and call_name(test) == "isinstance" and len(test.args) == 2):
            return
        subject, cls = test.args[0].value, test.args[1].value
        if not isinstance(subject, cst.Name) or subject.value not in self.params or subject.value in self.locals:
            return
        kind, classes = self.classify(cst.Call(func=cls)) if isinstance(cls, (cst.Name, cst.Attribute)) else (Kind.VALUE, ())
        if kind == Kind.MODULE:
            self.locals[subject.value] = (kind, classes)

    def _assign(self, target: cst.BaseExpression, value: cst.BaseExpression, order: tuple[int, int]) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            # self.q, self.k = nn.Linear(d, d), nn.Linear(d, d) / = [nn.Linear(d, d) for _ in range(2)]
            if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(target.elements):
                for t, v in zip(target.elements, value.elements):
                    if not isinstance(t, cst.StarredElement) and not isinstance(v, cst.StarredElement):
                        self._assign(t.value, v.value, order)
            elif isinstance(value, (cst.ListComp, cst.GeneratorExp)):
                for t in target.elements:
                    if not isinstance(t, cst.StarredElement):
                        self._assign(t.value, value.elt, order)
            elif isinstance(value, cst.Call) and self.resolve:
                # self.model, self.save = parse_model(cfg): what the function returns, position by position
                returned = self._returned_tuple(value, len(target.elements))
                if (call_name(value) or "").rsplit(".", 1)[-1] in known.MODEL_BUILDERS or _loads_model_pair(value):
                    # `self.model, self.tokenizer = load_model(path)`, `self.clip, self.preprocess = clip.load(name)`:
                    # a builder's element named as modules are is a model of no class we can tell, whatever its
                    # branches seem to return
                    returned = returned or [(Kind.VALUE, ())] * len(target.elements)
                    returned = [
                        (Kind.UNKNOWN, (UNKNOWN_CLASS,)) if kind == Kind.VALUE and _module_named(t.value)
                        else (kind, classes) for t, (kind, classes) in zip(target.elements, returned)
                    ]
                for t, (kind, classes) in zip(target.elements, returned):
                    if isinstance(t.value, cst.Name):
                        if kind > Kind.VALUE:
                            self.locals[t.value.value] = (kind, classes)  # `clip, _, pre = create(...)`: a local
                        continue
                    path = access_path(t.value)
                    if path is not None and path.root == "self" and len(path.parts) == 1 and kind > Kind.VALUE:
                        self._set(path.parts[0], kind, classes, order)
            return
        if isinstance(target, cst.Name):
            bound = upper_bound(value, self.env)
            if id(target) in self._clamps and target.value in self.env:
                bound = self.env[target.value]  # `if n > limit: n = limit` only lowers n
            if bound is None or target.value in self._unbounded:
                self.env.pop(target.value, None)  # once unknown on some path, unknown from then on
                self._unbounded.add(target.value)
            else:
                self.env[target.value] = max(self.env.get(target.value, bound), bound)
            if isinstance(value, cst.Call) and _is_partial(value):
                # `conv = partial(conv, ...)`: bind to what the inner name meant before, not to itself.
                inner = dotted(value.args[0].value)
                self.callables[target.value] = self.callables.get(inner, value) if inner else value
                self.locals[target.value] = (Kind.VALUE, ())  # the factory itself is not a module
                return
            if isinstance(value, (cst.Name, cst.Attribute)) and dotted(value) in self.callables:
                self.callables[target.value] = self.callables[dotted(value)]  # type: ignore[index]
            elif isinstance(value, cst.Name) and value.value not in self.locals and value.value not in self.params and (
                value.value in self.index.imports or value.value in self.index.skeleton.functions
            ):
                # `backbone = resnet50` (a factory of the file or imported, picked by a setting) ... `backbone(...)`
                self.callables[target.value] = value
            made = self._class_of(value)
            if made is None and isinstance(value, cst.IfExp):
                # `resblock = ResBlock1 if h.resblock == "1" else ResBlock2`: calling it builds either class
                made = self._either_class(target.value, (value.body, value.orelse))
            if made is None and (
                isinstance(value, (cst.Name, cst.Attribute)) and dotted(value) not in self.callables
                or isinstance(value, cst.Call) and call_name(value) == "getattr"
            ):
                made = self._named_builder(target.value, value)
                old = self.module_types.get(target.value) if made is not None else None
                if old is not None and made is not None:  # `if a: backbone = resnet18` / `elif b: backbone = resnet50`
                    made = (max(old[0], made[0]), old[1] + tuple(c for c in made[1] if c not in old[1]))
            if made is not None:
                self.module_types[target.value] = made  # `layer_type = type(self.base)`: calling it builds one
            if made is None and type(value) is cst.Subscript and self.cls is not None and (
                    keyed := class_lookup(value.value)) is not None:
                made = self.class_values(keyed, keyed=True)  # `rnn_cell = self.supported_rnns[rnn_type]`
                if made is not None:
                    self.module_types[target.value] = made
            lookup = class_lookup(value) if self.cls is not None else None
            if lookup is not None and (isinstance(value, cst.Call) or self.cls.inherited_method(lookup) is None):  # type: ignore[union-attr]
                self.class_locals[target.value] = lookup  # `cls = getattr(self, "act_class", None)`
                made = self.class_values(lookup)
                if made is not None:
                    self.module_types[target.value] = made
            self.locals[target.value] = self.classify(value)
            return
        if isinstance(target, cst.Subscript) and _is_self(target.value):
            # ModuleDict subclass: self["expert_0"] = Expert()
            kind, classes = self.classify(value)
            if kind in (Kind.MODULE, Kind.CONTAINER):
                self.facts.elements += classes
            return
        path = access_path(target)
        if path is None or path.root != "self" or not path.parts:
            return
        if len(path.parts) == 1:
            if isinstance(value, cst.Lambda):
                self.facts.lambdas[path.parts[0]] = value
            self._bound_attribute(path.parts[0], value)
            source = access_path(value) if isinstance(value, cst.Attribute) else None
            if source is not None and len(source.parts) == 1 and source.root in self.locals:
                kind, classes = self.locals[source.root]
                if kind == Kind.MODULE and value.attr.value in self.index.param_names:  # type: ignore[union-attr]
                    self.facts.borrowed[path.parts[0]] = (source.root, classes, source.parts[0])
            elif source is not None and source.root == "self" and len(source.parts) == 2 \
                    and (child := self.facts.members.get(source.parts[0])) is not None and child.kind == Kind.MODULE \
                    and source.parts[1] in self.index.param_names:
                # `self.weight = self.linear.weight`: the child's parameter under a second name (tied)
                self.facts.borrowed[path.parts[0]] = (f"self.{source.parts[0]}", child.classes, source.parts[1])
            getter = child_getter(self.facts.members, value.value) if isinstance(value, cst.Attribute) else None
            if getter is not None and known.torch_param_name(value.attr.value):  # type: ignore[union-attr]
                # `self.embeddings = self.llm.get_input_embeddings().weight`: a parameter of that child's module
                self.facts.borrowed[path.parts[0]] = (code_of(value.value), (UNKNOWN_CLASS,), value.attr.value)  # type: ignore[union-attr]
            lookups = self._lookups(value) if self.cls is not None else ()
            if any(not lookup.startswith("=") for lookup in lookups):
                built = self.facts.class_built
                built[path.parts[0]] = built.get(path.parts[0], ()) + lookups
            kind, classes = self.classify(value)
            if kind == Kind.UNKNOWN and source is not None and len(source.parts) == 1 and self._borrows_param(source):
                kind, classes = Kind.PARAM, ()  # `self.pos = text.positional_embedding`: registered here too
            old = self.facts.members.get(path.parts[0])
            if old is not None and old.call is not None and isinstance(value, cst.Name) and value.value == "None":
                return  # `else: self.global_embs = None`: the member left out, not built a second time
            if old is not None and kind == Kind.MODULE and _restated(value, path.parts[0]):
                old.kind, old.classes = kind, classes  # `self.module = cast(nn.MultiheadAttention, self.module)`
            self._set(path.parts[0], kind, classes, order)
            member = self.facts.members[path.parts[0]]
            made = call_name(value) if isinstance(value, cst.Call) else None
            if member.order == order and isinstance(value, cst.Call):
                member.call, member.env, member.made_by = value, dict(self.env), made
            elif member.made_by != made:
                member.made_by = None
            return
        if len(path.parts) == 2 and path.parts[1] == "[]" and isinstance(value, cst.Call):
            # `self.transform[k] = nn.ParameterDict(...)`: a container of parameter containers, modules never called
            made = self.index.qualify(call_name(value) or "")
            if made.rsplit(".", 1)[-1] in _PARAM_CONTAINERS:
                self._set(path.parts[0], Kind.CONTAINER, (made,), order)
            return
        source = access_path(value)
        if source is not None and source.root == "self" and "[]" not in path.parts:
            self.facts.ties += ((".".join(path.parts), ".".join(source.parts)),)

    def _borrows_param(self, source) -> bool:
        """Is `<local>.<name>` a parameter of the module a local holds (a class of this file or another)?"""
        kind, classes = self.locals.get(source.root, (Kind.VALUE, ()))
        if kind != Kind.MODULE or not classes or source.root in self.params:
            return False
        return all(member_param(self.index, ref, source.parts[0]) for ref in classes)

    def _set(self, name: str, kind: Kind, classes: tuple[str, ...], order: tuple[int, int]) -> None:
        old = self.facts.members.get(name)
        if old is None:
            self.facts.members[name] = Member(name, kind, classes, order)
            return
        if kind > old.kind:
            old.kind = kind
        merged = old.classes + tuple(c for c in classes if c not in old.classes)
        old.classes = merged
        old.call = old.env = None  # built more than once: no single call tells its size

    def _call(self, call: cst.Call, order: tuple[int, int]) -> None:
        name = call_name(call)
        if name is None:
            return
        args = call.args
        if name in {"self.register_buffer", "self.register_parameter", "self.add_module", "self.register_module"}:
            key = const_str(args[0].value) if args else None
            if key is None:
                return
            if name == "self.register_buffer":
                self._set(key, Kind.BUFFER, (), order)
            elif name == "self.register_parameter":
                self._set(key, Kind.PARAM, (), order)
            elif len(args) > 1:
                kind, classes = self.classify(args[1].value)
                self._set(key, kind, classes, order)
            return
        if name == "setattr" and len(args) == 3 and _is_self(args[0].value):
            key = const_str(args[1].value)
            if key is not None:
                kind, classes = self.classify(args[2].value)
                self._set(key, kind, classes, order)
            return
        if name.endswith("register_external_parameter") and len(args) >= 2:
            path = access_path(args[1].value)
            if path is not None and path.root == "self":
                self.facts.external |= {".".join(path.parts)}
            return
        if name in {"self.append", "self.extend", "self.add_module"} or name.endswith("__init__"):
            # ModuleList/Sequential subclasses filling themselves; super().__init__(*layers)
            for arg in args:
                kind, classes = self.classify(arg.value)
                if kind in (Kind.MODULE, Kind.CONTAINER):
                    self.facts.elements += classes
            return
        path = access_path(call.func)
        if path is not None and path.root == "self" and len(path.parts) == 2:
            # self.layers = nn.ModuleList(); self.layers.append(Block(c))
            if path.parts[1] in {"append", "extend", "insert", "add_module", "update"} and args:
                kind, classes = self.classify(args[-1].value)
                if kind in (Kind.MODULE, Kind.CONTAINER, Kind.UNKNOWN):
                    self._set(path.parts[0], Kind.CONTAINER, classes, order)
            return
        if isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name):
            local = call.func.value.value
            method = call.func.attr.value
            if method in {"append", "extend", "insert", "add_module"} and args:
                # (`modules = nn.Sequential()` ... `modules.add_module(f"conv_{i}", nn.Conv2d(...))`: filled by name)
                kind, classes = self.classify(args[-1].value)
                old_kind, old_classes = self.locals.get(local, (Kind.VALUE, ()))
                # (`model_ts.append(model_t)` for `model_t = build_model(cfg_t)`: a model of a class no file tells
                # is one too, where the list or the value is named as models are; not a tensor we cannot read)
                appended = args[-1].value
                if kind is Kind.UNKNOWN and not known.module_like_name(local) and not (
                        isinstance(appended, cst.Name) and known.module_like_name(appended.value)):
                    kind = Kind.VALUE
                if kind in (Kind.MODULE, Kind.CONTAINER, Kind.UNKNOWN):
                    self.locals[local] = (max(old_kind, Kind.CONTAINER), old_classes + classes)

    def classify(self, value: cst.BaseExpression) -> tuple[Kind, tuple[str, ...]]:
        """What kind of member an expression assigned to `self.x` makes."""
        if isinstance(value, cst.Call):
            return self._classify_call(value)
        if isinstance(value, cst.IfExp) or isinstance(value, cst.BooleanOperation) and isinstance(value.operator, cst.Or):
            # `encoder or Encoder(d)`, `encoder if encoder is not None else Encoder(d)`: one of the two
            return self.either(choice_leaves(value))
        if isinstance(value, cst.Subscript):
            base = dotted(value.value)
            if base is not None and base.rsplit(".", 1)[-1] in known.ACTIVATION_FACTORIES:
                return Kind.MODULE, (ACTIVATION,)
            if base in self.params and _MODULES_ARG.search(base):
                return Kind.UNKNOWN, (UNKNOWN_CLASS,)  # `self.model = modules[0]`: one of the modules passed in
            built = value.value
            builder = (call_name(built) or "").rsplit(".", 1)[-1] if isinstance(built, cst.Call) else ""
            if builder and known.LAYER_BUILDER_NAME.fullmatch(builder):
                # `build_norm_layer(cfg, c)[1]`: the layer of the (name, layer) pair a builder hands back
                kind, classes = self._classify_call(built)
                return (kind, classes) if kind == Kind.UNKNOWN else (Kind.VALUE, ())
            return Kind.VALUE, ()
        if isinstance(value, cst.Name):
            if value.value in {"None", "True", "False"}:
                return Kind.VALUE, ()
            if value.value in self.locals:
                return self.locals[value.value]
            if value.value in self.literal_params or value.value in self.index.skeleton.functions:
                return Kind.VALUE, ()  # `aggregate="sum"`: a setting; `fn = _sum_reduce`: a function of the file
            if value.value in self.params and _LOSS_PARAM.match(value.value):
                return Kind.VALUE, ()  # `self.loss = loss`: a criterion handed in (`F.cross_entropy`), no parameters
            return Kind.UNKNOWN, (UNKNOWN_CLASS,)
        if isinstance(value, (cst.List, cst.Tuple, cst.ListComp, cst.GeneratorExp)):
            classes = self._elements(value)
            return (Kind.CONTAINER, classes) if classes else (Kind.VALUE, ())
        if isinstance(value, cst.Attribute):
            path = access_path(value)
            if path is not None and path.root != "self" and path.root in self.locals:
                return Kind.UNKNOWN, (UNKNOWN_CLASS,)
            if path is not None and path.root != "self" and value.attr.value in {"weight", "bias"}:
                return Kind.PARAM, ()
            return Kind.VALUE, ()
        return Kind.VALUE, ()

    def either(self, options: list[cst.BaseExpression]) -> tuple[Kind, tuple[str, ...]]:
        """What a value that is one of `options` is. The caller's module or else a default built here
        (`default(mel_spec, MelSpec())`, `enc if enc is not None else Encoder(d)`, `norm or nn.LayerNorm(d)`) is
        of the class built: a module handed in stands in for the default and does what it does, so a default with
        no parameters (a feature extractor holding a buffer) makes a member that gathers nothing."""
        typed = [(option, self.classify(option)) for option in options]
        given = [o for o, _ in typed if isinstance(o, cst.Name) and o.value in self.params and o.value not in self.locals]
        others = [(o, result) for o, result in typed if result[0] > Kind.VALUE and not any(o is g for g in given)]
        if given and others and all(
            isinstance(o, cst.Call) and kind == Kind.MODULE and UNKNOWN_CLASS not in classes
            and not any(_does_nothing(self.index, c) for c in classes)
            for o, (kind, classes) in others
        ):
            typed = others  # (`None` among the options, `default(enc, None)`, is no module either way)
        kind, classes = Kind.VALUE, ()
        for _, (k, c) in typed:
            kind, classes = max(kind, k), classes + tuple(x for x in c if x not in classes)
        return kind, classes

    def class_values(self, name: str, keyed: bool = False) -> tuple[Kind, tuple[str, ...]] | None:
        """What calling the class the family of the class read holds in its attribute `name` builds: the module
        classes of every assignment (`class_values.attribute_values`), else None. `keyed`: a class the attribute,
        a dict of classes, holds under a key (`self.supported_rnns[kind]`)."""
        if self.cls is None or self._depth > 4:
            return None
        classes: tuple[str, ...] = ()
        self._depth += 1
        try:
            values = keyed_attribute_values if keyed else attribute_values
            for owner, expr in values(self.index, self.cls, name):
                kind, found = classify(owner, cst.Call(func=expr), resolve=self.resolve)
                if kind == Kind.MODULE:
                    classes += tuple(c if owner is self.index else owner.global_name(c) for c in found)
        finally:
            self._depth -= 1
        classes = tuple(dict.fromkeys(classes))
        return (Kind.MODULE, classes) if classes else None

    def _imported_registry(self, name: str) -> tuple[str, ...]:
        """The module classes the container another file binds to the imported `name` may build (`registry_values`
        read in that file), as other files name them."""
        module, _, bound = self.index.absolute(self.index.qualify(name)).rpartition(".")
        owner = self._other_file(module)
        return self._modules_built(owner, registry_values(owner, bound)) if owner is not None else ()

    def _module_namespace(self, written: str) -> tuple[str, ...]:
        """The module classes the functions and classes a program module binds at its top level build (`vits`, the
        module `import vision_transformer as vits` names), as other files name them; none for a module of no file
        we read or one too large to walk."""
        owner = self._other_file(self.index.absolute(self.index.qualify(written)))
        if owner is None:
            return ()
        names = [n for n in (*owner.skeleton.classes, *owner.skeleton.functions) if not n.startswith("_")]
        return self._modules_built(owner, [cst.Name(n) for n in names]) if len(names) <= 60 else ()

    def _other_file(self, module: str) -> ModelIndex | None:
        """The index of the program's file of `module`, if we can read it."""
        project = self.index.project
        file = project.file(module) if project is not None and module else None
        return type(self.index).of(file, project) if file is not None and file.skeleton is not None else None

    def _modules_built(self, owner: ModelIndex, callees) -> tuple[str, ...]:
        """The module classes calling each of `callees` (classes or functions of `owner`'s file) builds, as other files
        name them."""
        classes: tuple[str, ...] = ()
        self._depth += 1
        try:
            for callee in callees:
                kind, made = classify(owner, cst.Call(func=callee), resolve=True)
                classes += tuple(owner.global_name(c) for c in made) if kind == Kind.MODULE else ()
        finally:
            self._depth -= 1
        return tuple(dict.fromkeys(classes))

    def _lookups(self, value: cst.BaseExpression) -> tuple[str, ...]:
        """The class-valued attributes a value assigned to `self.x` is built by calling (`self.act_class(d)`, a local
        bound to `getattr(self, "act_class", None)`, through `.to(device)`), and `=name` for a member of `self` it may
        be instead (`cls(d) if cls else self.act`)."""
        if isinstance(value, cst.IfExp):
            return self._lookups(value.body) + self._lookups(value.orelse)
        if isinstance(value, cst.BooleanOperation):
            return self._lookups(value.left) + self._lookups(value.right)
        if isinstance(value, cst.Attribute) and class_lookup(value) is not None:
            return ("=" + value.attr.value,)
        if not isinstance(value, cst.Call):
            return ()
        func = value.func
        if isinstance(func, cst.Attribute) and func.attr.value in _RETURNS_SELF and isinstance(func.value, cst.Call):
            return self._lookups(func.value)
        if isinstance(func, cst.Name) and func.value in self.class_locals:
            return (self.class_locals[func.value],)
        lookup = class_lookup(func)
        if lookup is not None and (isinstance(func, cst.Call) or self.cls is not None and self.cls.inherited_method(lookup) is None):
            return (lookup,)
        return ()

    def _classify_call(self, call: cst.Call) -> tuple[Kind, tuple[str, ...]]:
        func = call.func
        lookup = class_lookup(func) if self.cls is not None else None
        if lookup is not None and (isinstance(func, cst.Call) or self.cls.inherited_method(lookup) is None):  # type: ignore[union-attr]
            made = self.class_values(lookup)  # `self.act_class(d)`, `getattr(self, "act_class", Actor)(d)`
            if made is not None:
                return made
        if isinstance(func, cst.Subscript) and isinstance(func.value, cst.Name) and func.value.value not in self.locals:
            classes = ()  # `NETS[name](d)`: any class of the file's registry
            for expr in registry_values(self.index, func.value.value):
                kind, found = self.classify(cst.Call(func=expr))
                classes += found if kind == Kind.MODULE else ()
            if not classes and self.resolve and self._depth <= 4 and func.value.value in self.index.imports:
                # `DiT_models[args.model](input_size=n)` for `from models import DiT_models`: the registry of the file
                # it comes from, each entry read there (`DiT_XL_2`, a function returning `DiT(...)`)
                classes = self._imported_registry(func.value.value)
            if classes:
                return Kind.MODULE, tuple(dict.fromkeys(classes))
        if isinstance(func, cst.Subscript) and isinstance(func.value, cst.Attribute) \
                and func.value.attr.value == "__dict__" and (zoo := dotted(func.value.value)) is not None:
            # `torchvision_models.__dict__[args.arch]()`, `vits.__dict__[args.arch](patch_size=16)`: a model zoo's
            # function or a program module's model looked up by name
            found = self._module_namespace(zoo) if self.resolve and self._depth <= 4 else None
            if found:
                return Kind.MODULE, found
            if known.model_zoo(self.index.qualify(zoo)):
                return Kind.UNKNOWN, (UNKNOWN_CLASS,)
        if isinstance(func, cst.Call) and call_name(func) == "getattr" and len(func.args) == 2 and self.resolve \
                and self._depth <= 4 and (zoo := dotted(func.args[0].value)) is not None and zoo in self.index.imports:
            # `getattr(base_model, "build_%s" % args.model)(dset, d)`: a program module's builder looked up by name
            found = self._module_namespace(zoo)
            if found:
                return Kind.MODULE, found
        if isinstance(func, cst.Call) and _is_partial(func) and func.args:
            return self._classify_callable(func.args[0].value, call)  # partial(nn.Linear, bias=False)(d, d)
        if isinstance(func, cst.IfExp):
            # `(FrozenCLIP if frozen else CLIP)(device)`: either class, chosen by configuration
            return self.either([call.with_changes(func=option) for option in (func.body, func.orelse)])
        if isinstance(func, cst.Attribute) and func.attr.value in _RETURNS_SELF and isinstance(func.value, (cst.Call, cst.Name)):
            # nn.Conv2d(...).requires_grad_(False), `clip = clip.cuda()` of a local module, `model.to(dtype=d)` of an
            # argument (what the argument itself would be): the module itself
            kind, classes = self.classify(func.value) if isinstance(func.value, cst.Name) else self._classify_call(func.value)
            if kind in (Kind.MODULE, Kind.CONTAINER, Kind.UNKNOWN):
                return kind, classes
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call) and self.resolve:
            # `CriticBuilder(obs, act).build_critic("v")`: a builder object made only to call one of its methods
            # builds what that method returns
            method = self._builder_method(func.value, func.attr.value)
            if method is not None:
                kind, classes = returns(method.index, method, call, self)
                if kind in (Kind.MODULE, Kind.CONTAINER):
                    return kind, classes
        written = call_name(call)
        if written is None and isinstance(func, (cst.Call, cst.Subscript)) and _given_settings(call):
            # `get_model_trunk(name)(config, name)`, `TRUNKS[name](config)`: a class looked up by name, of no kind we
            # can tell, built with settings (an activation looked up so is built with none: `get_act(name)()`)
            return Kind.UNKNOWN, (UNKNOWN_CLASS,)
        if written is None or written.startswith("."):
            return Kind.VALUE, ()
        if written.partition(".")[0] == "cls" and self._in_classmethod():
            if written == "cls" and self.cls.is_module:  # type: ignore[union-attr]
                return Kind.MODULE, (self.cls.name,)  # `model = cls(**config)` in a classmethod of a module class
            if written.count(".") == 1:  # `model = cls.from_config(path)`: what that classmethod of the class returns
                method = self.cls.inherited_method(written[4:])  # type: ignore[union-attr]
                if method is not None and method is not self.method:
                    kind, classes = self._returned(method, call)
                    if kind in (Kind.MODULE, Kind.CONTAINER):
                        return kind, classes
        if len(call.args) == 2 and self.index.qualify(written) == "typing.cast":
            # `cast(nn.MultiheadAttention, module)`: the value, of the class the cast names when that is a module
            named = call.args[0].value
            if isinstance(named, cst.Subscript) and (dotted(named.value) or "").rsplit(".", 1)[-1] == "Optional":
                named = named.slice[0].slice.value if isinstance(named.slice[0].slice, cst.Index) else named
            kind, classes = self._classify_call(cst.Call(func=named))
            return (kind, classes) if kind == Kind.MODULE else self.classify(call.args[1].value)
        if written in self.callables:
            return self._classify_callable(self.callables[written], call)
        if written in self.module_types:
            return self.module_types[written]
        if written in self.layer_params:
            return Kind.UNKNOWN, (UNKNOWN_CLASS,)  # norm_layer(dim): a layer class passed in
        if written in self.model_params and call.args:
            # `base_encoder(num_classes=dim)`: a network built from the constructor handed in (torchvision's
            # `models.__dict__[arch]`), of a class no file shows, with parameters
            return Kind.MODULE, (UNKNOWN_CLASS,)
        if written.startswith("self.") and written.count(".") == 1 and self.cls is not None:
            return self._returned(self.cls.method(written[5:]), call)  # self.fc1 = self.build_fc1(...)
        owner, _, constructor = written.rpartition(".")
        if owner and _ALT_CONSTRUCTOR.match(constructor):
            # Vision._from_config(cfg), Encoder.from_pretrained(path): an instance of that class
            kind, classes = self._classify_call(call.with_changes(func=call.func.value))  # type: ignore[attr-defined]
            if kind == Kind.MODULE:
                return kind, classes
            if not owner.rsplit(".", 1)[-1][:1].isupper() and not _NOT_A_MODEL_FACTORY.search(owner):
                # `self.auto_class.from_pretrained(path)`: a class held in a variable, so a model we cannot read
                return Kind.UNKNOWN, (UNKNOWN_CLASS,)
            if constructor == "from_pretrained" and kind == Kind.VALUE and not _NOT_A_MODEL_FACTORY.search(owner) \
                    and self.index.classes.get(owner) is None:
                # `AutoModel.from_pretrained(path)`: weights loaded into a class no file we read defines (a factory
                # of models, not a module class itself), so a model we cannot read
                return Kind.UNKNOWN, (UNKNOWN_CLASS,)
        if owner and (method := self._static_builder(owner, constructor)) is not None:
            # `Net._get_model(d)`, `Builder.build(cfg)`: a static or class method called through its class builds
            # the module it returns
            kind, classes = returns(method.index, method, call, self)
            if kind in (Kind.MODULE, Kind.CONTAINER):
                return kind, classes
        if owner and constructor in _BUILDS and not _NOT_A_MODEL_BUILD.search(owner.rsplit(".", 1)[-1]):
            # `config.wqkv.build()`, `MODELS.build(cfg)`: a configuration building the layer it describes, of a
            # class no file we read names here: a module we cannot read
            return Kind.UNKNOWN, (UNKNOWN_CLASS,)
        qualified = self.index.qualify(written)
        last = qualified.rsplit(".", 1)[-1]
        if last in ("Parameter", "UninitializedParameter"):  # (a lazy layer's, materialised at its first forward)
            return Kind.PARAM, ()
        if last in _PARAM_CONTAINERS:
            held = tuple(
                c for arg in call.args if arg.keyword is None for c in self._elements(arg.value) if c != LIBRARY_LAYER
            )
            # (`nn.ParameterDict({v: nn.Linear(2, 1) for v in names})` registers each module as a submodule)
            return (Kind.CONTAINER, held) if held else (Kind.PARAM, ())
        if last in _CONTAINERS and (known.is_torch_module_class(qualified) or written == last):
            classes: tuple[str, ...] = ()
            for arg in call.args:
                classes += self._elements(arg.value)
            return Kind.CONTAINER, classes
        if last in known.REPARAMETRIZE and call.args:
            return self.classify(call.args[0].value)
        if last in known.ACTIVATION_FACTORIES:
            return Kind.MODULE, (ACTIVATION,)
        if written not in self.index.classes and qualified in self.index.classes:
            written = qualified  # `MLP(d)` for `MLP = MultiLayerPerceptron` beside the class
        local = self.index.classes.get(written)
        if local is not None:
            return (Kind.MODULE, (written,)) if local.is_module else (Kind.VALUE, ())
        if known.is_torch_module_class(qualified):
            return Kind.MODULE, (qualified,)
        if last in known.TORCH_PARAMS:
            return Kind.MODULE, (last,)
        if (last[:1].isupper() or self.resolve and "." in qualified and self.index.external(qualified) is not None) \
                and self.index.is_module_base(qualified, self.resolve):
            return Kind.MODULE, (qualified,)  # (`xLSTMLarge(config)`: a class of another file, however it is cased)
        if written in known.DEEP_COPY and call.args:
            copied = access_path(call.args[0].value)
            member = self.facts.members.get(copied.parts[0]) if copied and copied.root == "self" and copied.parts else None
            if member is not None and len(copied.parts) == 1 and member.kind in (Kind.MODULE, Kind.CONTAINER):
                return member.kind, member.classes  # `self.dest_mlp = deepcopy(self.time_mlp)`: a copy of that member
            return self.classify(call.args[0].value)
        if "." not in written and written in self.index.skeleton.functions:
            return self._returned(self.index.function_info(written), call)  # def Linear(...): ...; return m
        if "." not in written and self._depth <= 8 and (nested := self._nested_function(written)) is not None:
            # `def embedding(): return Embed(n, d)` inside `__init__`, then `self.query_lt = embedding()` (followed
            # as deep as callables are: a nested function may call itself)
            self._depth += 1
            try:
                found = [self.classify(r.value) for r in walk_own(nested.body) if isinstance(r, cst.Return) and r.value]
            finally:
                self._depth -= 1
            if found and all(kind in (Kind.MODULE, Kind.CONTAINER) for kind, _ in found):
                return found[0][0], tuple(dict.fromkeys(c for _, classes in found for c in classes))
        # a function of another file building what it returns, also one named like a class, `SNLinear(d, 1)` of
        # `def SNLinear(*a): return spectral_norm(nn.Linear(*a))` (a class of that name is a module base, above)
        external = self.index.external_function(qualified) if self.resolve else None
        if external is not None:
            return returns(external[0], external[1], call, self)
        if not last[:1].isupper():
            if call.args and call.args[0].keyword is None and type(call.args[0].value).__name__ not in _DISPLAYS:
                # quant_noise(nn.Linear(...), p), `accelerator.prepare(model)`: a wrapper we cannot read returns the
                # module it was given (not a display of values: `mask.view([b, 1, 1, n])` returns no list, nor
                # `torch.cat([m.cpu() for m in chunks])`)
                kind, classes = self.classify(call.args[0].value)
                if kind in (Kind.MODULE, Kind.CONTAINER):
                    return kind, classes
        elif last in known.DATA_PARALLEL and call.args and call.args[0].keyword is None:
            # `model = DataParallel(model)` of a library we cannot read (torch_geometric's): the model it wraps
            kind, classes = self.classify(call.args[0].value)
            if kind in (Kind.MODULE, Kind.CONTAINER):
                return kind, classes
        described = dotted(call.args[0].value) if call.args else None  # `cfg.encoder`, not `cfg.tokenizer`
        no_model = bool(described and _NOT_A_MODEL_BUILD.search(described.rsplit(".", 1)[-1]))
        if known.LAYER_BUILDER_NAME.fullmatch(last) and not _NOT_A_MODEL_BUILD.search(last) \
                and not _NO_PARAMS_BUILT.search(last) and not no_model:
            # `build_conv_layer(cfg, c, c, 3)`, `build_norm_layer(cfg, c)[1]` (OpenMMLab's and others' builders of a
            # library we cannot read): a layer of a class we cannot tell
            return Kind.UNKNOWN, (UNKNOWN_CLASS,)
        if last in known.MODEL_BUILDERS and not no_model or known.model_zoo_function(qualified):
            # `timm.create_model(name)`, `hydra.utils.instantiate(cfg.encoder)`, a package's `build_model(cfg)` we
            # cannot read, `torchvision.models.resnet50()`: a model of a class we cannot tell
            return Kind.UNKNOWN, (UNKNOWN_CLASS,)
        return Kind.VALUE, ()

    def _static_builder(self, owner: str, name: str) -> MethodInfo | None:
        """The static or class method `name` of the class `owner` names (of this file or, when resolving, another),
        which a call through the class runs; None for any other method or an owner that is no class we read."""
        found = class_named(self.index, owner, self.resolve)
        method = found.inherited_method(name) if found is not None else None
        if method is None or method is self.method or method.node is None:
            return None
        return method if any(dotted(d.decorator) in _CLASS_LEVEL for d in method.node.decorators) else None

    def _builder_method(self, made: cst.Call, name: str) -> MethodInfo | None:
        """The method `name` of the plain class (no module) whose construction `made` is, of this file or another."""
        written = call_name(made)
        found = class_named(self.index, written, self.resolve) if written is not None else None
        if found is None or found.is_module:
            return None
        method = found.inherited_method(name)
        return None if method is None or method is self.method or method.node is None else method

    def _classify_callable(self, target: cst.BaseExpression, call: cst.Call) -> tuple[Kind, tuple[str, ...]]:
        """Calling `target` (a class, a `partial` of one) with the arguments of `call`."""
        if isinstance(target, cst.Call) and _is_partial(target) and target.args:
            target = target.args[0].value
        if not isinstance(target, (cst.Name, cst.Attribute)) or self._depth > 8:
            return Kind.UNKNOWN, (UNKNOWN_CLASS,)
        self._depth += 1
        try:
            return self._classify_call(call.with_changes(func=target))
        finally:
            self._depth -= 1

    def _named_builder(self, target: str, value: cst.BaseExpression) -> tuple[Kind, tuple[str, ...]] | None:
        """`backbone = resnet50`: a local bound to a module class or a factory function of this file or another,
        by name: calling it builds what calling the name would. `getattr(torchvision.models, arch)`: one of the
        builders of an imported package of models, chosen by a name known at run time: a model of a class we
        cannot tell."""
        if self.method is not None and f"{target}(" not in self.method.text:
            return None  # (never called here: nothing to classify, and other files stay unread)
        if isinstance(value, cst.Call) and call_name(value) == "getattr" and len(value.args) == 2:
            package = dotted(value.args[0].value)
            if package is not None and self.index.qualify(package).rsplit(".", 1)[-1] == "models":
                if not isinstance(value.args[1].value, cst.SimpleString):
                    return Kind.MODULE, (UNKNOWN_CLASS,)
            return None
        name = dotted(value)
        if name is None or name in self.locals or name in self.params or name == "self" or name.startswith("self."):
            return None
        kind, classes = self._classify_call(cst.Call(func=value))
        return (Kind.MODULE, classes) if kind == Kind.MODULE and classes else None

    def _either_class(self, target: str, options) -> tuple[Kind, tuple[str, ...]] | None:
        """What calling one of `options` (classes or builders named) builds, joined; None when none is one."""
        found = [
            made for option in options if isinstance(option, (cst.Name, cst.Attribute))
            and (made := self._named_builder(target, option)) is not None
        ]
        if not found:
            return None
        return max(kind for kind, _ in found), tuple(dict.fromkeys(c for _, classes in found for c in classes))

    def _class_of(self, value: cst.BaseExpression) -> tuple[Kind, tuple[str, ...]] | None:
        """`type(self.base)` / `type(layer)` / `self.base.__class__` of a module: a class that builds modules."""
        if isinstance(value, cst.Call) and call_name(value) == "type" and len(value.args) == 1:
            inner = value.args[0].value
        elif isinstance(value, cst.Attribute) and value.attr.value == "__class__":
            inner = value.value
        else:
            return None
        kind, classes = self.classify(inner)
        path = access_path(inner)
        if path is not None and path.root == "self" and len(path.parts) == 1 and path.parts[0] in self.facts.members:
            member = self.facts.members[path.parts[0]]
            kind, classes = member.kind, member.classes
        return (Kind.MODULE, classes) if kind in (Kind.MODULE, Kind.UNKNOWN) and classes else None

    def _in_classmethod(self) -> bool:
        """Is the function read a classmethod of a class (where `cls` is that class)? (Asked of an expression alone,
        with the class, `cls` is that class too.)"""
        if self.cls is not None and self.method is None:
            return True
        node = getattr(self.method, "node", None)
        return self.cls is not None and isinstance(node, cst.FunctionDef) and any(
            dotted(d.decorator) == "classmethod" for d in node.decorators
        )

    def _returned_tuple(self, call: cst.Call, n: int) -> list[tuple[Kind, tuple[str, ...]]]:
        """What a function of this or another file returns as an `n`-tuple, element by element (else [])."""
        written = call_name(call)
        if written and written.startswith("self.") and written.count(".") == 1 and self.cls is not None:
            # `self.encoder_q, self.encoder_k = self.init_encoders(name)`: a builder method of the class
            method = self.cls.inherited_method(written[len("self."):])
            if method is None or method is self.method:
                return []
            returned = returns_tuple(method.index, method, n)
            if method.index is self.index:
                return returned
            return [(kind, tuple(method.index.global_name(c) for c in classes)) for kind, classes in returned]
        if not written or written.startswith(".") or "." in written and written.partition(".")[0] == "self":
            return []
        found = None
        if "." not in written and written in self.index.skeleton.functions:
            found = (self.index, self.index.function_info(written))
        else:
            found = self.index.external_function(self.index.qualify(written))
        if found is None or found[1] is None:
            return []
        owner, function = found
        returned = returns_tuple(owner, function, n)
        if owner is self.index:
            return returned
        return [(kind, tuple(owner.global_name(c) for c in classes)) for kind, classes in returned]

    def _nested_function(self, name: str) -> cst.FunctionDef | None:
        """The function `name` defined inside the method read (one of its local helpers), if any."""
        node = self.method.node if self.method is not None else None
        if node is None or f"def {name}(" not in self.method.text:
            return None
        return next((f for f in walk(node.body) if isinstance(f, cst.FunctionDef) and f.name.value == name), None)

    def _returned(self, method: MethodInfo | None, call: cst.Call) -> tuple[Kind, tuple[str, ...]]:
        if method is None:
            return Kind.VALUE, ()
        return returns(self.index, method, call, self)

    def _elements(self, value: cst.BaseExpression) -> tuple[str, ...]:
        """Module classes inside a list/tuple/dict/comprehension/name given to a container."""
        if isinstance(value, (cst.ListComp, cst.GeneratorExp, cst.SetComp)):
            return self._module_classes(value.elt)
        if isinstance(value, cst.DictComp):
            return self._module_classes(value.value)
        if isinstance(value, (cst.List, cst.Tuple, cst.Set)):
            out: tuple[str, ...] = ()
            for element in value.elements:
                out += tuple(c for c in self._module_classes(element.value) if c not in out)
            return out
        if isinstance(value, cst.Dict):
            out = ()
            for element in value.elements:
                if isinstance(element, cst.DictElement):
                    out += tuple(c for c in self._module_classes(element.value) if c not in out)
            return out
        if isinstance(value, cst.Call) and (call_name(value) or "").endswith(("OrderedDict", "dict")) and value.args:
            out = ()  # `dict([("a", Mod())])`, `dict(drop=nn.Dropout(p), h=nn.ModuleList(...))`: every value given
            for arg in value.args:
                found = self._elements(arg.value) if arg.keyword is None else self._module_classes(arg.value)
                out += tuple(c for c in found if c not in out)
            return out
        if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add):
            left = self._elements(value.left)  # `[Block(c) for _ in range(n)] + [ResBlock(c) for _ in range(3)]`
            return left + tuple(c for c in self._elements(value.right) if c not in left)
        if isinstance(value, cst.Name) and value.value in self.locals:
            kind, classes = self.locals[value.value]
            return classes if kind in (Kind.MODULE, Kind.CONTAINER) else ()
        return self._module_classes(value)

    def _module_classes(self, value: cst.BaseExpression) -> tuple[str, ...]:
        if isinstance(value, cst.Tuple) and len(value.elements) == 2:  # OrderedDict([("name", Mod())])
            value = value.elements[1].value
        kind, classes = self.classify(value)
        if kind in (Kind.MODULE, Kind.CONTAINER, Kind.UNKNOWN):
            return classes
        if isinstance(value, cst.Call) and (name := call_name(value)) and name.rsplit(".", 1)[-1][:1].isupper():
            # `nn.Sequential(ConvModule(8, 32, 7), ...)` of a library class we cannot read: a container holds only
            # modules, so it is one, of a class and parameters we cannot tell
            return (LIBRARY_LAYER,) if self.index.external(self.index.qualify(name)) is None else ()
        return ()




# Functions that make a model from a name or a configuration (a registry's, a config system's, a package's).
# What only a module undergoes, below a member (`_used_as_modules`): its parameters or children listed, a weight's
# values read, a layer or a parameter put into it (not its state loaded: optimizers and schedulers have one too).
_MODULE_USE = (
    r"self\.NAME\.(?:parameters|named_parameters|named_modules|children|requires_grad_"
    r"|register_forward_hook|register_forward_pre_hook)\("
    r"|self\.NAME(?:\.\w+|\[[^\]\n]*\])*\.(?:weight|bias)\.(?:data\b|detach\(|copy_\()"
    r"|self\.NAME(?:\.\w+)+\s*=\s*(?:torch\.)?nn\.[A-Z]\w*\("
)
# A library function building a layer by its name (`known.LAYER_BUILDER`) ...
# ... but not one that builds a layer without parameters.
_NO_PARAMS_BUILT = re.compile(r"(?i)activation|_act_|dropout|pool|padding|upsample")
# Methods a configuration (or a registry) builds the object it describes with.
_BUILDS = frozenset({"build", "build_module", "build_model", "build_layer"})
# ... what they build when that is no module (`config.tokenizer.build()`, `cfg.optimizer.build(params)`).
_NOT_A_MODEL_BUILD = re.compile(
    r"(?i)token|processor|extractor|scheduler|dataset|pipeline|optim|loader|sampler|loss|metric|transform|logger"
)


def child_getter(members: dict[str, Member], value: cst.BaseExpression) -> tuple[Member, Path] | None:
    """`self.llm.get_input_embeddings()`: a module method that runs nothing (`known.NOT_RUNS`, not a container's)
    called on a child, with that child's member and path (what it hands back is read as one of the child's modules)."""
    if not isinstance(value, cst.Call) or not isinstance(value.func, cst.Attribute):
        return None
    method = value.func.attr.value
    if method not in known.NOT_RUNS or method in known.CONTAINER_METHODS:  # (`self.cfg.get("loss")`: an entry)
        return None
    path = access_path(value.func.value)
    if path is None or path.root != "self" or not path.parts:
        return None
    member = members.get(path.parts[0])
    if member is None or member.kind not in (Kind.MODULE, Kind.UNKNOWN):
        return None
    return member, path


_NOT_A_MODEL_FACTORY = re.compile(r"Token|Config|config|Processor|Extractor|Scheduler|Dataset|Pipeline")
# Annotations of an argument that holds several values (`dict[str, Policy]`, `Sequence[nn.Module]`).
CONTAINER_ANNOTATIONS = frozenset(
    {"dict", "Dict", "Mapping", "MutableMapping", "list", "List", "Sequence", "tuple", "Tuple", "Iterable"}
)
_MODULES_ARG = re.compile(r"module|model|layer|block|net|encoder|decoder")
# nn.Module methods that return the module itself, so `nn.Linear(...).to(device)` is still that Linear.
_RETURNS_SELF = frozenset(
    {"requires_grad_", "to", "cuda", "cpu", "half", "float", "double", "bfloat16", "type", "train", "eval", "apply",
     "share_memory", "to_empty"}
)
_ALT_CONSTRUCTOR = re.compile(r"^_?from_\w+$")
# Decorators of a method a call through its class runs without an instance.
_CLASS_LEVEL = frozenset({"staticmethod", "classmethod"})
# A parameter named as a network's constructor handed in (`base_encoder`, `encoder_fn`, `backbone_cls`... not a
# layer's: `_LAYER_PARAM`), called to build the network.
_MODEL_CONSTRUCTOR_PARAM = re.compile(
    r"^(?:base_)?(?:encoder|backbone|model|net|network|arch)(?:_(?:fn|cls|class|builder))?$"
)
_LAYER_PARAM = re.compile(r"(?:^|_)(?:layer|block|module|cls|class|norm|act)(?:_(?:fn|cls|class|type|factory))?$")


# A parameter named as a criterion is (`loss`, `criterion`, `loss_fn`, `recon_loss_func`): what a model is handed
# to score its outputs, a function or a torch loss, which owns no parameter to gather.
_LOSS_PARAM = re.compile(r"(?:\w+_)?(?:loss|criterion)(?:_?fn|_func(?:tion)?)?$")


def _negative_literal(node: cst.CSTNode | None) -> bool:
    return (
        isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus)
        and isinstance(node.expression, cst.Integer)
    )


def _clamp_assigns(node: cst.If) -> set[int]:
    """The target of `if n > limit: n = limit` (or `if limit < n:`): an assignment that only lowers `n`."""
    test = node.test
    if node.orelse is not None or not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return set()
    body = node.body.body
    line = body[0] if len(body) == 1 and isinstance(body[0], cst.SimpleStatementLine) else None
    assign = line.body[0] if line is not None and len(line.body) == 1 else None
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
        return set()
    target = assign.targets[0].target
    operator = test.comparisons[0].operator
    right = test.comparisons[0].comparator
    if isinstance(operator, (cst.GreaterThan, cst.GreaterThanEqual)):
        big, small = test.left, right
    elif isinstance(operator, (cst.LessThan, cst.LessThanEqual)):
        big, small = right, test.left
    else:
        return set()
    same = isinstance(target, cst.Name) and isinstance(big, cst.Name) and big.value == target.value
    return {id(target)} if same and small.deep_equals(assign.value) else set()


def _is_partial(call: cst.Call) -> bool:
    return (call_name(call) or "") in {"partial", "functools.partial"} and bool(call.args)


def _is_self(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Name) and node.value == "self"


