"""The model index: a file's classes and methods, which classes are `nn.Module`s, what `forward` reaches.

Built lazily per file. The skeleton (`ast`) gives every class, base and
method span up front; a method is parsed with libcst only when something asks
for it. Rules ask for methods through `ModelIndex.methods(...)` with the
regular expression of the tokens they cannot fire without, so most methods of
a large file are never parsed at all. What a class's `__init__` builds is
`members.py`'s question; other files come from `project.py`, read never
imported, and are indexed the same way.

Questions other modules ask of a file are `memoised` on its index: each is a
typed function computed once per index and arguments.
"""

from __future__ import annotations

import functools
import os
import re
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

from zgen.zero_policy import DEFAULT_PERSISTENCE_THRESHOLD

from . import known
from .project import Project, SourceFile, absolute_name
from .skeleton import ClassSpan, FunctionSpan, Skeleton
from .tree import Snippet, body_start, call_name, code_of, one_line, parse_snippet, positional_parameters, walk

if TYPE_CHECKING:
    import libcst as cst

__all__ = ["ClassInfo", "MethodInfo", "ModelIndex", "entry_name", "memoised", "registered_names", "super_method"]

T = TypeVar("T")
Query = Callable[..., T]
_UNSET: Any = object()
_COMPUTING: Any = object()


def _forget_cached(obj: object) -> None:
    """Drop the `cached_property` values an object keeps (the parses, infos and answers they refer to)."""
    for name in [k for k, v in vars(type(obj)).items() if isinstance(v, cached_property)]:
        obj.__dict__.pop(name, None)


def memoised(query: Query[T] | None = None, *, cycle: Any = _UNSET) -> Any:
    """A query over one file, computed once per index and arguments (kept with the index).

    `cycle` is the answer while the same question is being computed (a class
    whose `__init__` builds itself, a function handing its argument to
    itself); without it a question may not depend on itself. Arguments are
    keys, passed by position: names, infos and nodes (which hash by identity).
    """

    def wrap(fn: Query[T]) -> Query[T]:
        @functools.wraps(fn)
        def cached(index: ModelIndex, *args: Any) -> T:
            key = (fn, *args)
            memo = index._memo
            if key in memo:
                value = memo[key]
                if value is _COMPUTING:
                    raise RuntimeError(f"{fn.__qualname__}{args!r} depends on itself; give it a `cycle` answer")
                return value
            memo[key] = _COMPUTING if cycle is _UNSET else cycle
            try:
                value = memo[key] = fn(index, *args)
            except BaseException:
                del memo[key]
                raise
            return value

        return cached

    return wrap if query is None else wrap(query)


_PARAM_DEF = re.compile(
    r"self\.(\w+)\s*(?::[^=\n]*)?=\s*(?:[\w.]*\.)?(?:Uninitialized)?Parameter(?:List|Dict)?\(|register_parameter\(\s*[\"'](\w+)"
    r"|setattr\(\s*self\s*,\s*[\"'](\w+)[\"']\s*,\s*(?:[\w.]*\.)?Parameter\("
)
# `self.register_buffer("name", ...)`: a buffer's name.
_BUFFER_DEF = re.compile(r"register_buffer\(\s*[\"'](\w+)[\"']")
# `self.name = nn.Parameter(<args>)` with what it is built from (to tell a scalar from a table).
# (Also the first branch of a conditional: `self.mask_token = (\n Parameter(torch.zeros(1, 1, d)) if ... else ...)`.)
_LARGE_PARAM_DEF = re.compile(r"self\.(?:\w+\.)*(\w+)\s*(?::[^=\n]*)?=\s*(?:\(\s*)?(?:[\w.]*\.)?(?:Uninitialized)?Parameter\(([^\n]*)")
_SCALAR_PARAM_ARGS = re.compile(
    r"\s*(?:torch\.)?(?:tensor|scalar_tensor)\(|\s*(?:torch\.)?(?:ones|zeros|randn|rand|empty)\(\s*(?:1|\[\s*\]|\(\s*\)|\[\s*1\s*\]|\(\s*1\s*,\s*\))\s*\)"
)
_TORCH_PARAM_NAMES = frozenset(name for names in known.TORCH_PARAMS.values() for name in names)
# transformers' shared modules: their classes are outputs and utilities, not models of another file.
_SHARED_MODELING = frozenset(
    {
        "modeling_outputs",
        "modeling_utils",
        "modeling_layers",
        "modeling_rope_utils",
        "modeling_attn_mask_utils",
        "modeling_flash_attention_utils",
        "modeling_tf_utils",
        "modeling_flax_utils",
    }
)
# transformers' modules of outputs, caches, configs and masks (not layers).
_NOT_MODULES = frozenset(
    {"cache_utils", "configuration_utils", "masking_utils", "modeling_outputs", "generic", "import_utils", "hub"}
)
# The `.` first, then the look-behind: a pattern that starts with a literal is searched for that character
# (about ten times faster over a method's text than trying the look-behind at every position). Likewise
# `self(?<!\wself)` is `\bself` with the word first: a leading `\b` also stops that search.
_ATTR_NOT_ON_SELF = re.compile(r"\.(?<!\bself\.)(\w+)")
_RNN_PARAM = re.compile(r"(?:weight|bias)_[ih]h_l\d")
# A method only a module has, called on `self` (`self.state_dict()`): in a class with no base of its own that does
# not define it, the class is a mixin of modules (`class IOMixIn:` ... `torch.save(self.state_dict(), p)`).
_SELF_MODULE_CALL = re.compile(
    r"self(?<!\wself)\.(state_dict|load_state_dict|parameters|named_parameters|named_modules|named_children"
    r"|register_buffer|register_parameter|register_module|modules|children|named_buffers|buffers)\("
)
# Bases a mixin may have and still be no class of any library (`class IOMixIn(ABC)`).
_MIXIN_BASES = frozenset({"object", "ABC", "abc.ABC", "Generic", "typing.Generic"})


def _builds_layers(cls: ClassInfo) -> bool:
    """Does `cls` build torch layers on `self` (`self.conv = nn.Conv2d(...)`) and define `forward`? Derived from a
    library's class we cannot read, it is a module all the same: only a module's `__setattr__` keeps a layer as a
    child. (A base of the library's own that builds none, a loss or a runner, stays what it was.)"""
    if "forward" in cls.span.methods and _BUILDS_LAYER.search(cls.text) is not None:
        return True
    # `class RotatedTwoStageDetector(BaseDetector)` with `forward_train`/`simple_test` of its own, `forward` the
    # library base's (or `forward` of its own): a module when it builds its backbone, neck or heads through the
    # library's builders or registries (`self.backbone = MODELS.build(backbone)`)
    return any(m.startswith("forward") for m in cls.span.methods) and _BUILDS_PART.search(cls.text) is not None


# `self.dla_up = DLAUpsample(` (a class of this file, capitalised): the text trigger of `_builds_local_modules`.
_BUILDS_LOCAL = re.compile(r"self(?<!\wself)\.\w+\s*(?::[^=\n]*)?=\s*([A-Z]\w*)\(")
# `self.conv = nn.Conv2d(`, `self.blocks = torch.nn.ModuleList(` (word first, as below), `self.bn =
# build_norm_layer(` (of `known.LAYER_BUILDER`, only the builders of single layers: a class calling a registry's
# `build_module` may build anything, a loss or a runner among them)
_BUILDS_LAYER = re.compile(
    r"self(?<!\wself)\.\w+\s*(?::[^=\n]*)?=\s*(?:(?:torch\.)?nn\.[A-Z]\w*|build_\w*(?:layer|conv|norm\w*))\(")
def _runs_itself(cls: ClassInfo) -> bool:
    """Does `cls` switch itself to evaluation (`self.eval()`) and run its own forward (`self.forward(features)`,
    `self(x)`), neither defined by the class? Derived from a library's class we cannot read (`class
    INSTRUCTOR(SentenceTransformer)`), it is a module: only a module has both."""
    if "forward" in cls.span.methods or "eval" in cls.span.methods:
        return False
    return _SELF_EVAL.search(cls.text) is not None and _SELF_FORWARD.search(cls.text) is not None


_SELF_EVAL = re.compile(r"self(?<!\wself)\.eval\(\)")
_SELF_FORWARD = re.compile(r"self(?<!\wself)(?:\.forward)?\(")


# `self.backbone = build_backbone(`, `self.rpn_head = build_head(`: the parts of a model a registry builds
# `self.backbone = MODELS.build(backbone)`, `self.head = registry.HEADS.build(cfg)`: the same through a registry
_BUILDS_PART = re.compile(
    r"self(?<!\wself)\.\w+\s*=\s*build_(?:backbone|neck|\w*head)\("
    r"|self(?<!\wself)\.\w*(?:backbone|neck|head|encoder|decoder)\s*=\s*(?:\w+\.)*[A-Z][A-Z_]*\.build\("
)
# Modules of Python's own kinds of class (`abc.ABC`, `typing.Generic`, `enum.Enum`): no library layer among them.
_STDLIB_ROOTS = frozenset({"abc", "typing", "typing_extensions", "enum", "collections", "dataclasses", "builtins"})


def module_mixin(cls: ClassInfo) -> bool:
    """Is `cls`, with no base but `object`/`ABC`/`Generic`, a mixin of modules: one of its methods calls on `self` a
    method only an `nn.Module` has, which no method of the class defines? Its `self` is then the module it is
    mixed into, built (and partitioned) when its methods run."""
    if any(b.split("[", 1)[0] not in _MIXIN_BASES for b in cls.qualified_bases):
        return False
    return any(m.group(1) not in cls.span.methods for m in _SELF_MODULE_CALL.finditer(cls.text))


_SELF_CALL = re.compile(r"self(?<!\wself)\s*\.\s*(\w+)\s*\(|super(?<!\wsuper)\(\)\s*\.\s*(\w+)\s*\(")  # word first: see above
# `self.name` read, neither called nor assigned (word first, as above): a property read runs its getter.
_SELF_READ = re.compile(r"self(?<!\wself)\s*\.\s*(\w+)\b(?!\s*(?:\(|=[^=]))")
# `nn.MultiheadAttention.forward(self, q, k, v)`, `Base.attend(cast(Base, self), h)`: a method of a class run on
# `self`, which reads the attributes it knows by name (properties of this class among them). Word first, as above.
_SELF_TO_CLASS = re.compile(
    r"(?<![\w.])(?:\w+\.)*[A-Z]\w*\.(?!__)\w+\(\s*(?:(?:typing\.)?cast\(\s*[\w.]+\s*,\s*)?self\s*[,)]"
)
# A method declared `@property` (or `@cached_property`, `@functools.cached_property`).
PROPERTY_DEF = re.compile(r"@(?:\w+\.)?(?:cached_)?property[ \t]*\n[ \t]*def[ \t]+(\w+)")


@dataclass(eq=False)
class MethodInfo:
    """A method of a class in this file, parsed on demand."""

    owner: ClassInfo
    span: FunctionSpan
    index: ModelIndex

    @cached_property
    def text(self) -> str:
        return self.index.skeleton.text(self.span.start, self.span.end)

    @cached_property
    def snippet(self) -> Snippet | None:
        return self.index.parse(self.span)

    @cached_property
    def self_calls(self) -> list[tuple[str, bool]]:
        """(name, through `super()`) of each `self.name(...)` / `super().name(...)` call in the text, in order
        (read once, though every class that inherits the method asks)."""
        return [(m.group(1) or m.group(2), bool(m.group(2))) for m in _SELF_CALL.finditer(self.text)]

    @cached_property
    def self_reads(self) -> frozenset[str]:
        """Names `n` of each `self.n` the text reads without calling or assigning it (`h * self.scaled_bias`)."""
        return frozenset(_SELF_READ.findall(self.text)) if "self" in self.text else frozenset()

    @cached_property
    def runs_class_method_on_self(self) -> bool:
        """Does the text run a method of a class on `self` (`nn.MultiheadAttention.forward(self, q, k, v)`)? That
        method reads what it knows by name of `self`: the properties defined beside it stand for those attributes (a
        constructor, `Base.__init__(self)`, is no such reader)."""
        text = self.text
        return ("(self," in text or "(self)" in text or "cast(" in text) and _SELF_TO_CLASS.search(text) is not None

    @property
    def node(self) -> cst.FunctionDef | None:
        snip = self.snippet
        return snip.function if snip is not None else None

    @property
    def name(self) -> str:
        return self.span.name

    @cached_property
    def order(self) -> dict[int, int]:
        """Pre-order index of every node of the method, by `id(node)`: what runs before what."""
        node = self.node
        return {} if node is None else {id(n): i for i, n in enumerate(walk(node))}


class ClassInfo:
    """A class of this file, with its in-file bases resolved."""

    def __init__(self, span: ClassSpan, index: ModelIndex) -> None:
        self.span = span
        self.index = index
        self.name = span.name
        self._resolving = False
        self._naming = False

    @cached_property
    def text(self) -> str:
        """The source of the class statement."""
        return self.index.skeleton.text(self.span.start, self.span.end)

    @cached_property
    def qualified_bases(self) -> tuple[str, ...]:
        return tuple(self.index.qualify(b) for b in self.span.bases)

    @cached_property
    def local_bases(self) -> tuple[ClassInfo, ...]:
        found = []
        for base in self.span.bases:
            info = self.index.local_class(base)
            if info is not None and info is not self:
                found.append(info)
        return tuple(found)

    def self_callers(self, name: str) -> list[tuple[ModelIndex, ClassInfo]]:
        """The class, its in-file bases and its bases in other files (each with its index) whose text calls
        `self.<name>(`: where the class's own calls of its method `name` are."""
        needle = f"self.{name}("
        owners = [(self.index, c) for c in self.mro] + list(self.external_bases)
        return [(owner_index, owner) for owner_index, owner in owners if needle in owner.text]

    def self_call_bindings(
        self, func: cst.FunctionDef, wanted: frozenset[str], bound_by: Callable[..., dict]
    ) -> Iterator[tuple[str, Any]]:
        """(parameter of the method `func`, what a call of it by the class itself binds it to) for the parameters in
        `wanted`; `bound_by(index, owner, name)` reads one owner's calls as {position or keyword: value}."""
        name = func.name.value
        params = positional_parameters(func)
        for owner_index, owner in self.self_callers(name):
            for key, value in bound_by(owner_index, owner, name).items():
                param = params[key] if isinstance(key, int) and key < len(params) else key
                if param in wanted:
                    yield param, value

    @cached_property
    def external_bases(self) -> tuple[tuple[ModelIndex, ClassInfo], ...]:
        """Bases defined in other files of the program, read from their source."""
        found = []
        for written, qualified in zip(self.span.bases, self.qualified_bases):
            if self.index.local_class(written) is not None or _known_base(qualified):
                continue  # a torch/transformers root class: nothing of it to merge, and its file is large
            external = self.index.external(qualified)
            if external is not None:
                found.append(external)
        return tuple(found)

    @cached_property
    def mro(self) -> tuple[ClassInfo, ...]:
        """This class and its in-file bases, depth first (enough for method lookup here)."""
        order: list[ClassInfo] = []
        stack = [self]
        while stack:
            info = stack.pop(0)
            if info in order:
                continue
            order.append(info)
            stack.extend(info.local_bases)
        return tuple(order)

    @cached_property
    def is_module(self) -> bool:
        if self._resolving:  # bases that name each other across files: no answer from the cycle
            return False
        self._resolving = True
        try:
            return self.index.is_module_class(self, set())
        finally:
            self._resolving = False

    @cached_property
    def container_kind(self) -> str | None:
        """`ModuleList`/`ModuleDict`/`Sequential` when this class derives from one."""
        for info in self.mro:
            for base in info.qualified_bases:
                last = base.rsplit(".", 1)[-1]
                if last in {"ModuleList", "ModuleDict", "Sequential"}:
                    return last
            for _index, external in info.external_bases:
                if external.container_kind:
                    return external.container_kind
        return None

    def method(self, name: str) -> MethodInfo | None:
        """The method `name` as Python would find it through the in-file bases."""
        for info in self.mro:
            span = info.span.methods.get(name)
            if span is not None:
                return info._method_info(span)
        return None

    def inherited_method(self, name: str) -> MethodInfo | None:
        """`method(name)`, else the method of a base class defined in another file (read there)."""
        found = self.method(name)
        if found is not None:
            return found
        for info in self.mro:
            for _index, base in info.external_bases:
                found = base.inherited_method(name)
                if found is not None:
                    return found
        return None

    @cached_property
    def method_names(self) -> frozenset[str]:
        """The names `inherited_method` answers: the methods of the class, of its in-file bases and of its bases in
        other files (read there), each of theirs in turn."""
        if self._naming:  # bases that name each other across files: no answer from the cycle
            return frozenset()
        self._naming = True
        try:
            names = {name for info in self.mro for name in info.span.methods}
            for info in self.mro:
                for _index, base in info.external_bases:
                    names |= base.method_names
            return frozenset(names)
        finally:
            self._naming = False

    def _method_info(self, span: FunctionSpan) -> MethodInfo:
        return self.index.method_info(self, span)

    def all_methods(self) -> list[MethodInfo]:
        """Every method this class has, own definitions first, each name once."""
        seen: dict[str, MethodInfo] = {}
        for info in self.mro:
            for name, span in info.span.methods.items():
                if name not in seen:
                    seen[name] = info._method_info(span)
        return list(seen.values())

    @cached_property
    def property_names(self) -> frozenset[str]:
        """Names of the methods of the class and its in-file bases declared `@property`."""
        return frozenset(name for info in self.mro for name in PROPERTY_DEF.findall(info.text))

    def reachable(self, root: str, inherited: bool = False, properties: bool = False) -> list[MethodInfo]:
        """`root` and every method it reaches through `self.m(...)` / `super().m(...)` calls; with `inherited`, also
        methods of bases defined in other files (read there), as Python would dispatch them on `self`; with
        `properties`, also the properties of the class it reads (`self.weight_dict` runs its getter there: what
        runs in which scope)."""
        first = self.inherited_method(root) if inherited else self.method(root)
        if first is None:
            return []
        found = [first]
        seen = {id(first)}
        i = 0
        while i < len(found):
            current = found[i]
            i += 1
            for name, through_super in current.self_calls:
                if through_super:
                    target = _super_method(current.owner, name, inherited)
                else:
                    target = self.inherited_method(name) if inherited else self.method(name)
                if target is not None and id(target) not in seen:
                    seen.add(id(target))
                    found.append(target)
            reads = current.self_reads & self.property_names
            if current.runs_class_method_on_self:  # the properties its own class defines, standing for attributes
                reads = reads | set(PROPERTY_DEF.findall(current.owner.text))
            for name in sorted(reads) if properties and self.property_names else ():
                target = self.method(name)
                if target is not None and id(target) not in seen:
                    seen.add(id(target))
                    found.append(target)
        return found

    @cached_property
    def forward_methods(self) -> list[MethodInfo]:
        """The methods that run inside this module's forward (where its own parameters are gathered); with no
        `forward` of its own (or of an in-file base), the methods of the class that a `forward` inherited from a
        base in another file reaches through `self.m(...)` (`pre_decoder` of a detector whose base's forward runs
        `self.loss` -> `self.forward_transformer` -> `self.pre_decoder`). A module that overrides `__call__` and
        defines no `forward` (lingua's `TiedLinear`) runs that instead, with no hook at all."""
        found = self._reached_from("forward")
        if not found and self.is_module and self.method("__call__") is not None and self.method("forward") is None:
            return self.reachable("__call__", properties=True)
        return self._handed_methods(found)

    def _handed_methods(self, found: list[MethodInfo]) -> list[MethodInfo]:
        """`found`, and the methods it names as values rather than calls, which it then runs (`model_func =
        {"TransE": self.TransE, ...}` ... `model_func[self.model_name](h, r, t)`, `checkpoint(self._block, x)`), with
        what they reach; not a hook it registers (`hook_methods`)."""
        seen = {id(m) for m in found}
        for method in list(found):
            if "register_" in method.text:
                continue
            for name in sorted(method.self_reads):
                target = self.method(name)
                if target is None or id(target) in seen or name in self.property_names:
                    continue
                for reached in self.reachable(name, properties=True):
                    if id(reached) not in seen:
                        seen.add(id(reached))
                        found.append(reached)
        return found

    def _reached_from(self, root: str) -> list[MethodInfo]:
        """`reachable(root, properties=True)`; when neither the class nor an in-file base defines `root`, the
        methods of the class that the `root` of a base in another file reaches through `self.m(...)` calls (a
        template method: the base's `__init__` calls `self._init_layers()`, its `forward` `self.pre_decoder()`),
        and what those reach in turn."""
        found = self.reachable(root, properties=True)
        if found or self.method(root) is not None:
            return found
        names = self._inherited_names(root)
        seen: set[int] = set()
        for method in self.all_methods():
            if method.name in names and method.name != root:
                for reached in self.reachable(method.name, properties=True):
                    if id(reached) not in seen:
                        seen.add(id(reached))
                        found.append(reached)
        return found

    @cached_property
    def hook_methods(self) -> list[MethodInfo]:
        """Methods the class registers as forward hooks of a module (`self.register_forward_pre_hook(self._build)`),
        and what they reach: they run with every forward call, outside the gather ZeRO-3 makes around it."""
        found: list[MethodInfo] = []
        for match in _HOOK_REGISTRATION.finditer(self.text) if "register_forward" in self.text else ():
            for method in self.reachable(match.group(1), properties=True):
                if all(method is not m for m in found):
                    found.append(method)
        return found

    @cached_property
    def repr_methods(self) -> list[MethodInfo]:
        """`__repr__`, `__str__`, `extra_repr` and what they reach, less what forward or `__init__` reach: printing
        the built model runs them outside any forward."""
        taken = {id(m) for m in self.forward_methods} | {id(m) for m in self.init_methods}
        found: list[MethodInfo] = []
        for name in ("__repr__", "__str__", "extra_repr"):
            for method in self.reachable(name, properties=True) if name in self.span.methods else ():
                if id(method) not in taken:
                    taken.add(id(method))
                    found.append(method)
        return found

    @cached_property
    def init_methods(self) -> list[MethodInfo]:
        """`__init__` and the helpers it calls (`self._build_layers()`), or the overrides an inherited `__init__` of
        another file calls (`_reached_from`)."""
        return self._reached_from("__init__")

    @cached_property
    def later_methods(self) -> list[MethodInfo]:
        """The class's own methods (not inherited ones) that its construction does not run: each runs on the built
        object, after `zero.Init` partitioned what the constructor built."""
        constructing = {id(m) for m in self.init_methods}
        return [m for m in self.all_methods() if m.owner is self and id(m) not in constructing]

    @cached_property
    def entry_methods(self) -> list[MethodInfo]:
        """Methods a training loop calls on the built, partitioned model (`fuse_lora`, `crop_block_size`).

        Every method neither `forward` nor `__init__` reaches, leaving out
        initialisation by convention (`init_weights`, `reset_parameters`,
        `_init_weights`: they run before partitioning or through `apply`), the
        methods those reach, dunders, and state-dict and gather helpers.
        """
        taken = {id(m) for m in self.forward_methods} | {id(m) for m in self.init_methods}
        for method in self.all_methods():
            if _NOT_ENTRY.search(method.name):
                taken.update(id(m) for m in self.reachable(method.name, properties=True))
        if self.method("forward") is None:  # forward inherited from another file calls this class's overrides
            names = self._inherited_names("forward")
            taken.update(id(m) for m in self.all_methods() if m.name in names)
        for sub in self.index.classes.values():  # a base class's helper that a subclass's forward calls
            if sub is not self and self in sub.mro:
                taken.update(id(m) for m in sub.forward_methods)
        called = self.index.forward_text  # `self.decoder.decoder_query(x)`: part of another forward
        roots = [m for m in self.all_methods() if id(m) not in taken and f".{m.name}(" not in called]
        # A helper an initialiser shares with an entry point (`tie_weights` from `init_weights` and from
        # `resize_token_embeddings`) runs on the built model too, when the entry point calls it.
        found = {id(m) for m in roots}
        gathered = {id(m) for m in self.forward_methods} | {id(m) for m in self.init_methods}
        for root in roots:
            for method in self.reachable(root.name, properties=True):
                if id(method) not in found and id(method) not in gathered and not _NOT_ENTRY.search(method.name):
                    found.add(id(method))
                    roots.append(method)
        return roots

    def _inherited_names(self, root: str) -> set[str]:
        """Names of the methods an inherited `root` of another file reaches through `self.m(...)` calls."""
        names: set[str] = set()
        todo = [root]
        while todo and len(names) < 200:
            name = todo.pop()
            method = self.inherited_method(name)
            if method is None or name in names:
                continue
            names.add(name)
            todo.extend(name for name, _ in method.self_calls)
        return names

    @cached_property
    def late_init_methods(self) -> list[MethodInfo]:
        """Initialisers by name that neither this class's `__init__` nor `forward` reaches and no `apply` runs
        (`bias_init`, `setup_embeddings_and_output_layer`, `zero_parameters`), and what they call.

        Someone else runs them on the built module: a parent's or subclass's `__init__`
        (`self.model[-1].bias_init()`) or the training code. Either way its children are built,
        and partitioned under `deepspeed.zero.Init`. A method taking a module to visit
        (`_init_weights(self, module)`) is an `apply` callback, not one of these.
        """
        candidates = [m for m in self.all_methods() if _LATE_INIT.search(m.name) and not _NOT_LATE_INIT.search(m.name)]
        if not candidates:
            return []
        taken = {id(m) for m in self.forward_methods} | {id(m) for m in self.init_methods}
        found: list[MethodInfo] = []
        for method in candidates:
            if id(method) in taken or _visits_a_module(method.text) or self.index.handed_over(method.name):
                continue  # a callback (`self.apply(self._init)`, `named_apply(self._init, self)`)
            for reached in self.reachable(method.name):
                if id(reached) not in taken and not _visits_a_module(reached.text):
                    taken.add(id(reached))
                    found.append(reached)
        return found

    def __repr__(self) -> str:
        return f"ClassInfo({self.name})"


def super_method(owner: ClassInfo, name: str) -> MethodInfo | None:
    """The method `super().<name>(...)` runs in a method of `owner`: its bases', in this file or another."""
    return _super_method(owner, name, True)


def _super_method(owner: ClassInfo, name: str, inherited: bool = False) -> MethodInfo | None:
    for base in owner.local_bases:
        found = base.inherited_method(name) if inherited else base.method(name)
        if found is not None:
            return found
    for _index, base in owner.external_bases if inherited else ():
        found = base.inherited_method(name)
        if found is not None:
            return found
    return None


class ModelIndex:
    """The index of one file. Cheap to create; everything is computed on first use."""

    def __init__(
        self,
        path: str,
        source: str,
        skeleton: Skeleton,
        project: Project | None = None,
        module: str = "",
        is_package: bool = False,
        file: SourceFile | None = None,
    ) -> None:
        self.path = path
        self.source = source
        self.skeleton = skeleton
        self.imports = skeleton.imports
        # The other files of the program (None: this file alone), and this file's dotted module name.
        self.project = project
        self.module = module
        self.is_package = is_package
        self.file = file  # the project's record of this file, when it was read as another file's dependency
        # Parameters with fewer elements stay gathered under ZeRO-3 (the config's value when one is checked).
        self.persistence_threshold = DEFAULT_PERSISTENCE_THRESHOLD
        self.classes = {name: ClassInfo(span, self) for name, span in skeleton.classes.items()}
        self._snippets: dict[tuple[int, int], Snippet | None] = {}
        self._parsed_from: dict[int, FunctionSpan | ClassSpan] = {}  # a parsed statement's node, by id -> its span
        self._methods: dict[tuple[int, int], MethodInfo] = {}
        self._memo: dict[tuple[Any, ...], Any] = {}  # answers of `memoised` queries
        self._stars: dict[str, str | None] = {}  # names found through star imports (`_starred`)

    @classmethod
    def of(cls, file: SourceFile, project: Project) -> ModelIndex:
        """The index of another file of the program, built once per version of that file."""
        index = _INDEXES.get(file)
        if index is None:
            index = cls(file.path, file.source, file.skeleton, project, file.module, file.is_package, file)  # type: ignore[arg-type]
            _INDEXES[file] = index
        return index

    def release(self) -> None:
        """Forget the parses, infos and answers kept for this file, once it will not be asked again.

        The infos and the index refer to each other, so without this their parse
        trees would wait for Python's cycle collector; released, they are freed at once.
        """
        for info in (*self._methods.values(), *self.classes.values()):
            _forget_cached(info)
        self._memo.clear()
        self._snippets.clear()
        self._parsed_from.clear()
        self._methods.clear()
        self.classes = {}
        _forget_cached(self)

    # --- names -------------------------------------------------------------

    @cached_property
    def param_names(self) -> frozenset[str]:
        """Every name this file registers as a parameter, plus those torch.nn classes register."""
        names = set(_TORCH_PARAM_NAMES)
        names.update(registered_names(self.source))
        return frozenset(names)

    @cached_property
    def buffer_names(self) -> frozenset[str]:
        """Names of buffers: the running statistics of torch's batch norms and every name this file registers with
        `register_buffer` (and never as a parameter). ZeRO-3 leaves buffers whole: no use of one is a hazard."""
        names = set(known.TORCH_BUFFER_NAMES)
        if "register_buffer" in self.source:
            names.update(m.group(1) for m in _BUFFER_DEF.finditer(self.source))
        return frozenset(names - (self.param_names - known.TORCH_BUFFER_NAMES))

    @cached_property
    def related_param_names(self) -> frozenset[str]:
        """Parameter names of this file and of the files of its own package that it imports.

        `self.encoder.pos_embedding` on an encoder handed to the constructor:
        no class to look in, but the package registers `pos_embedding` as an
        `nn.Parameter`. Scalars (`nn.Parameter(torch.ones(1))`, a
        `torch.tensor(...)`) are left out: they stay gathered.
        """
        names = {m.group(1) for m in _LARGE_PARAM_DEF.finditer(self.source) if not _SCALAR_PARAM_ARGS.match(m.group(2))}
        if self.project is not None and self.module:
            own = self.module.partition(".")[0]
            # (a script imports its siblings by their own names, `from model import Transformer`: its package's too)
            here = os.path.dirname(os.path.abspath(self.path)) if "." not in self.module else None
            for target in sorted(set(self.imports.values())):
                target = self.absolute(target) if target.startswith(".") else target
                if target.partition(".")[0] != own and (here is None or target.count(".") > 1):
                    continue
                for module in (target, target.rsplit(".", 1)[0]):
                    other = self.project.file(module)
                    if other is not None and target.partition(".")[0] != own and (
                        os.path.dirname(os.path.abspath(other.path)) != here
                    ):
                        continue  # (an installed library's module, not a sibling)
                    if other is not None and other is not self.file:
                        names.update(
                            m.group(1) for m in _LARGE_PARAM_DEF.finditer(other.source)
                            if not _SCALAR_PARAM_ARGS.match(m.group(2))
                        )
                        break
        return frozenset(names - _TORCH_PARAM_NAMES)

    def mentions_param(self, text: str) -> bool:
        """Does `text` access `<x>.<param>` for some `x` other than `self` (a possible submodule parameter)?"""
        return _mentions_param(self, text)

    def qualify(self, name: str) -> str:
        """Replace the first component of a dotted name by what it was imported as (absolute when known)."""
        head, _, rest = name.partition(".")
        alias = self.skeleton.aliases.get(head)
        if alias is not None:  # `MLP = MultiLayerPerceptron`: the name it stands for
            return self.qualify(f"{alias}.{rest}" if rest else alias)
        target = self.imports.get(head)
        if target is None:
            if head in self.classes or head in self.skeleton.functions:
                return name
            target = known.CONVENTIONAL_ALIASES.get(head)
            if target is None and self.skeleton.stars:
                target = self._starred(head)  # `from .a2c import *` ... `class TRPO(A2C)`
            if target is None:
                return name
        else:
            target = self.absolute(target)  # (also a sibling's bare name: `_sibling_prefix`)
        return f"{target}.{rest}" if rest else target

    def _starred(self, name: str) -> str | None:
        """The qualified name a name of no import of its own comes from through one of the file's star imports
        (`from .a2c import *`: `A2C` is `pkg.a2c.A2C` when that module defines or imports it), if the project can
        read one."""
        found = self._stars.get(name, False)
        if found is False:
            found = None
            if self.project is not None and self.module:
                for star in self.skeleton.stars:
                    qualified = f"{self.absolute(star)}.{name}"
                    if not qualified.startswith(".") and self.project.resolve(qualified) is not None:
                        found = qualified
                        break
            self._stars[name] = found
        return found  # type: ignore[return-value]

    def absolute(self, name: str) -> str:
        """`..layers.Mlp` written in this file as an absolute name, when this file's package is known."""
        return absolute_name(name, self.module, self.is_package, self.path)

    def located(self, ref: str) -> tuple[ModelIndex, ClassInfo] | None:
        """The class `ref` names, of this file or another one, with the index it is read in."""
        local = self.classes.get(ref)
        return (self, local) if local is not None else self.external(ref)

    def external(self, ref: str) -> tuple[ModelIndex, ClassInfo] | None:
        """The class of another file that a qualified class reference names, read from its source."""
        if self.project is None or "." not in ref or ref.startswith((".", "torch.")) or ref in self.classes:
            return None
        if ref.partition(".")[0] not in self.import_roots and ref.partition(".")[0] != self.module.partition(".")[0]:
            return None  # `hidden.view`, `self.x`: not a name imported from another module, nor of this package
        module = ref.rsplit(".", 2)[-2]
        if module in _SHARED_MODELING or module in _NOT_MODULES:
            return None  # outputs, caches, configs, masks: large files that define no layers
        return _external_class(self, ref)

    @cached_property
    def import_roots(self) -> frozenset[str]:
        """Top-level packages this file's imports name (absolute), star imports included (`from models import *`):
        the only roots worth resolving."""
        return frozenset(
            self.absolute(target).partition(".")[0] for target in (*self.imports.values(), *self.skeleton.stars)
        )

    @cached_property
    def other_framework(self) -> bool:
        """Does the file import TensorFlow, Keras, JAX or Flax and not torch (no PyTorch model code in it)?"""
        roots = self.import_roots
        return "torch" not in roots and bool(roots & {"tensorflow", "keras", "tf_keras", "jax", "flax"})

    def global_name(self, ref: str) -> str:
        """A class reference of this file as other files see it (`Mlp` -> `pkg.layers.Mlp`)."""
        if ref in self.classes and self.module:
            return f"{self.module}.{ref}"
        return ref

    def qualified_call(self, node: cst.CSTNode) -> str | None:
        name = call_name(node)
        if name is None or name.startswith("."):
            return name
        return self.qualify(name)

    # --- parsing -----------------------------------------------------------

    def parse(self, span: FunctionSpan | ClassSpan) -> Snippet | None:
        key = (span.start, span.end)
        if key not in self._snippets:
            text = self.skeleton.text(span.start, span.end)
            snippet = self._snippets[key] = parse_snippet(text, span.start, span.indent)
            if snippet is not None:
                self._parsed_from[id(snippet.node)] = span
        return self._snippets[key]

    def body_text(self, func: cst.FunctionDef, limit: int = 20000) -> str:
        """The body of a `def` parsed from this file, on one line: what `code_of(func.body, limit)` gives, read from
        the file's text (generating it again from the parse walks every node)."""
        span = self._parsed_from.get(id(func))
        if span is not None:
            text = self.skeleton.text(span.start, span.end)
            at = body_start(text)
            if at >= 0:
                return one_line(text[at:], limit)
        return code_of(func.body, limit)

    def handed_over(self, name: str) -> bool:
        """Is `self.<name>` used as a value, not called (`self.apply(self._init)`): a method passed as a callback?"""
        needle, source = "self." + name, self.source
        at = source.find(needle)
        while at >= 0:
            end = at + len(needle)
            rest = source[end:end + 40].lstrip(" ")
            if (at == 0 or not (source[at - 1].isalnum() or source[at - 1] in "_.")) and not (
                rest[:1].isalnum() or rest[:1] in "_(.[" or rest[:1] == "=" and rest[1:2] != "="
            ):
                return True
            at = source.find(needle, end)
        return False

    def method_info(self, cls: ClassInfo, span: FunctionSpan) -> MethodInfo:
        key = (span.start, span.end)
        info = self._methods.get(key)
        if info is None:
            owner = next((c for c in cls.mro if c.span.methods.get(span.name) is span), cls)
            info = MethodInfo(owner, span, self)
            self._methods[key] = info
        return info

    def function_info(self, name: str) -> MethodInfo | None:
        """A module-level function of this file, parsed on demand like a method."""
        span = self.skeleton.functions.get(name)
        if span is None:
            return None
        key = (span.start, span.end)
        info = self._methods.get(key)
        if info is None:
            info = self._methods[key] = MethodInfo(None, span, self)  # type: ignore[arg-type]
        return info

    def external_function(self, ref: str) -> tuple[ModelIndex, MethodInfo] | None:
        """A module-level function of another file that a qualified name refers to."""
        if self.project is None or "." not in ref or ref.startswith((".", "torch.")):
            return None
        if ref.rsplit(".", 2)[-2] in _NOT_MODULES:
            return None
        if ref.partition(".")[0] not in self.import_roots and ref.partition(".")[0] != self.module.partition(".")[0]:
            return None  # not a name imported from another module, nor of this package (imported in a function)
        return _external_function(self, ref)

    def is_module_class(self, cls: ClassInfo, seen: set[str]) -> bool:
        if cls.name in seen:
            return False
        seen.add(cls.name)
        for written, qualified in zip(cls.span.bases, cls.qualified_bases):
            local = self.local_class(written)
            if local is not None and local is not cls:
                if self.is_module_class(local, seen):
                    return True
                continue
            if self.is_module_base(qualified):
                return True
        # a class building layers on a base of a library we cannot read (`mmengine.model.BaseModule`), itself or
        # through bases we read
        return module_mixin(cls) or (
            _builds_layers(cls) or _runs_itself(cls) or self._builds_local_modules(cls, seen)
        ) and self.unread_ancestry(cls, set())

    def _builds_local_modules(self, cls: ClassInfo, seen: set[str]) -> bool:
        """Does `cls`, defining `forward`, keep on `self` a module of a class of this file (`self.dla_up =
        DLAUpsample(...)` for a module class the file defines)? Only a module keeps a module as a child."""
        if "forward" not in cls.span.methods:
            return False
        for built in _BUILDS_LOCAL.finditer(cls.text):
            local = self.classes.get(built.group(1))
            if local is not None and local is not cls and self.is_module_class(local, set(seen)):
                return True
        return False

    def unread_ancestry(self, cls: ClassInfo, seen: set[str]) -> bool:
        """Does a base of `cls`, or of a base we read, come from a library we cannot read (`class STN(Preprocessor)`
        for `class Preprocessor(BaseModule)` of `mmengine.model`, not installed)?"""
        if self.global_name(cls.name) in seen:
            return False
        seen.add(self.global_name(cls.name))
        for written, qualified in zip(cls.span.bases, cls.qualified_bases):
            local = self.local_class(written)
            if local is not None and local is not cls:
                if self.unread_ancestry(local, seen):
                    return True
                continue
            if "." not in qualified or qualified.partition(".")[0] in _STDLIB_ROOTS:
                continue
            external = self.external(qualified)
            if external is None or external[0].unread_ancestry(external[1], seen):
                return True
        return False

    def local_class(self, written: str) -> ClassInfo | None:
        """The class of this file a base names: `Block`, or `Builder.BaseNetwork` for a class nested in a class
        of this file (nested classes are indexed by their own name)."""
        found = self.classes.get(written)
        if found is None and "." in written and written.partition(".")[0] in self.classes:
            found = self.classes.get(written.rpartition(".")[2])
        return found

    def is_module_base(self, qualified: str, resolve: bool = True) -> bool:
        """A base class from outside the file that is an `nn.Module` (`resolve`: read other files to tell)."""
        last = qualified.rsplit(".", 1)[-1]
        if last in known.MODULE_BASE_NAMES or known.is_torch_module_class(qualified):
            return True
        module = qualified.rsplit(".", 2)[-2] if qualified.count(".") >= 1 else ""
        if module in _SHARED_MODELING or module in _NOT_MODULES:
            return False  # outputs, caches, configs, masks: known not to be layers
        external = self.external(qualified) if resolve else None
        if external is not None:
            return external[1].is_module
        # Model classes imported from another model's modeling file (transformers' modular files).
        module = qualified.rsplit(".", 2)[-2] if qualified.count(".") >= 1 else ""
        return module.startswith("modeling_") and module not in _SHARED_MODELING and last[:1].isupper()

    @cached_property
    def forward_text(self) -> str:
        """The text of every method run in a forward, with `self.` calls masked: `.name(` in it is a call
        of `name` on another object (`self.codebook.lookup(x)`)."""
        seen: set[int] = set()
        texts = []
        for cls in self.module_classes():
            for method in cls.forward_methods:
                if id(method) not in seen:
                    seen.add(id(method))
                    texts.append(method.text)
        # `F.normalize(x)`, `torch.nn.functional.normalize(x)`: torch's functions, no method of another object
        text = _FORWARD_MASK.sub("~", "\n".join(texts))
        # `info = {}` ... `info.update(d)`: a name bound to a dict, list or set display is no module
        displays = sorted(set(_DISPLAY_BOUND.findall(text)))
        if displays:
            text = re.sub(rf"\b(?:{'|'.join(map(re.escape, displays))})\.(?=\w+\s*\()", "~", text)
        return text

    def module_classes(self) -> list[ClassInfo]:
        return [c for c in self.classes.values() if c.is_module]

    def methods(self, scope: str, trigger=None) -> Iterator[tuple[ClassInfo, MethodInfo]]:
        """(class, method) pairs of module classes whose text matches `trigger`.

        `scope` is `forward` (methods run inside forward), `init` (`__init__`
        and its helpers), `entry`, `late`, `hook` (methods registered as forward
        hooks), `repr` (`repr_methods`) or `all` (every method). A method inherited by several
        classes is yielded once per class, since members can differ.
        """
        for cls in self.module_classes():
            if scope == "forward":
                candidates = cls.forward_methods
            elif scope == "init":
                candidates = cls.init_methods
            elif scope == "entry":
                candidates = cls.entry_methods
            elif scope == "late":
                candidates = cls.late_init_methods
            elif scope == "hook":
                candidates = cls.hook_methods
            elif scope == "repr":
                candidates = cls.repr_methods
            else:
                candidates = cls.all_methods()
            for method in candidates:
                if trigger is None or trigger.search(method.text):
                    yield cls, method


    def class_of(self, ref: str) -> ClassInfo | None:
        """The in-file class a member's class reference names, if any."""
        return self.classes.get(ref)


# What `forward_text` masks: `self.` before a call (`\bself`, word first), `().`, and torch's functional
# namespaces before a call (`F.normalize(`, `torch.cat(`, `nn.functional.pad(`; each word first, then what may not
# stand before it: every alternative starting with a literal, the search skips to their first characters).
# A name a method binds to a dict, list or set display (`info = {}`, `outs: list = []`, `seen = set()`).
_DISPLAY_BOUND = re.compile(r"^[ \t]*(\w+)[ \t]*(?::[^=\n]*)?=[ \t]*(?:\{|\[|(?:dict|list|set)\()", re.MULTILINE)
_FORWARD_MASK = re.compile(
    r"self(?<!\wself)\.(?=\w+\s*\()|\(\)\."
    r"|F(?<![\w.]F)\.(?=\w+\s*\()|torch(?<![\w.]torch)\.(?=\w+\s*\()|functional(?<![\w.]functional)\.(?=\w+\s*\()"
    r"|\.functional\."
)


def _known_base(qualified: str) -> bool:
    last = qualified.rsplit(".", 1)[-1]
    return last in known.MODULE_BASE_NAMES or known.is_torch_module_class(qualified) or last in {"object", "Generic"}


# Indexes of other files, one per version of a file (dropped with the project's record of it).
_INDEXES: weakref.WeakKeyDictionary[SourceFile, ModelIndex] = weakref.WeakKeyDictionary()


@memoised
def _external_class(index: ModelIndex, ref: str) -> tuple[ModelIndex, ClassInfo] | None:
    found = index.project.resolve(ref) if index.project is not None else None
    if found is None or found[1] not in found[0].skeleton.classes:  # type: ignore[union-attr]
        return None
    owner = ModelIndex.of(found[0], index.project)  # type: ignore[arg-type]
    return owner, owner.classes[found[1]]


@memoised
def _external_function(index: ModelIndex, ref: str) -> tuple[ModelIndex, MethodInfo] | None:
    found = index.project.resolve(ref) if index.project is not None else None
    if found is None:
        return None
    owner = ModelIndex.of(found[0], index.project)  # type: ignore[arg-type]
    info = owner.function_info(found[1])
    return (owner, info) if info is not None else None


@memoised
def _mentions_param(index: ModelIndex, text: str) -> bool:
    """`ModelIndex.mentions_param`, once per text: several rules ask it of the same method."""
    names = set(_ATTR_NOT_ON_SELF.findall(text))
    return bool(names & index.param_names) or any(_RNN_PARAM.match(n) for n in names)


def registered_names(text: str) -> set[str]:
    """Names `text` registers as parameters (`self.x = nn.Parameter(...)`, `register_parameter("x", ...)`,
    `setattr(self, "x", nn.Parameter(...))`),
    read from the text: the pre-filter for what to parse (`members.facts` says what a class registers)."""
    return {m.group(1) or m.group(2) or m.group(3) for m in _PARAM_DEF.finditer(text)}


# `register_forward_pre_hook(self._materialise)`, `register_forward_hook(partial(self._log, ...))`.
_HOOK_REGISTRATION = re.compile(r"\.register_forward(?:_pre)?_hook\(\s*(?:(?:functools\.)?partial\(\s*)?self\.(\w+)\b")

# `init` in a method's name names an initialiser (`init_weights`, `reinitialize`, `_initialise_head`), but not
# `initial` the adjective: `get_initial_state`, `initial_hidden(batch)` hand out a starting value, often a learnt one,
# and a training loop or a rollout calls them on the built model.
INIT_NAME = r"init(?!ial(?!i[sz]))"
# Methods that are not entry points on a partitioned model: initialisation, hooks, (de)serialisation.
_NOT_ENTRY = re.compile(
    r"^__\w+__$|" + INIT_NAME + r"|reset|state_dict|^_?(?:pre_)?hook|gather|zero_?\d|zero_grad|is_zero|zero_?init|deepspeed|^extra_repr$"
    r"|^_?apply$|^_?build|^_?make|^_?create|^_?setup"
    r"|^_?forward_?\w"  # forward variants (`forward_features`, `forward_intermediates`) compute like forward
)


def entry_name(name: str, module: bool = True) -> bool:
    """Could a method or function of this name be called on a built model (not an initialiser, hook, loader)?
    Of a class that is not a module (`module=False`: a trainer, an agent) builders and set-up methods are too
    (`create_optimizer`, `setup_ema`): the model it holds was built before it; so is its own `state_dict()`, which
    collects the state of the models it holds for a checkpoint (a module's is the module API's)."""
    found = _NOT_ENTRY.search(name)
    return found is None or not module and (
        _BUILDER.match(found.group(0)) is not None or _APPLY.match(name) is not None or found.group(0) == "state_dict"
    )


_APPLY = re.compile(r"_?apply$")  # `Module.apply`'s name; of a class that is no module, a method like any other


_BUILDER = re.compile(r"_?(?:build|make|create|setup)$")


# Initialisers and builders by name (the part of `_NOT_ENTRY` that is about setting weights up) ...
_LATE_INIT = re.compile(INIT_NAME + r"|reset|^_?build|^_?make|^_?create|^_?setup|^_?zero_")
# ... less dunders, state-dict, hook, load/save and gather helpers.
_NOT_LATE_INIT = re.compile(
    r"^__\w+__$|state_dict|^_?(?:load|save)_?|^_?(?:pre_)?hook|gather|deepspeed|zero3|^_?apply$|_fn$|_func$"
)
# `def _init_weights(self, module)` / a static `def _init(module, name)`: called on each module a walk visits.
_VISITS_A_MODULE = re.compile(r"^\s*(?:@[^\n]*\n\s*)*def \w+\(\s*(?:self\s*,\s*)?(?:module|m|mod|layer|submodule|cell|model)\b")


def _visits_a_module(text: str) -> bool:
    return _VISITS_A_MODULE.match(text) is not None
