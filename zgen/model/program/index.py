"""The model index: which classes are `nn.Module`s, what their `__init__` builds, what `forward` reaches.

Built lazily per file. The skeleton (`ast`) gives every class, base and
method span up front; a method is parsed with libcst only when a rule asks
for it, and a class's `__init__` only when a rule needs to know its members.
Rules ask for methods through `ModelIndex.methods(...)` with the regular
expression of the tokens they cannot fire without, so most methods of a
large file are never parsed at all.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import libcst as cst

from . import known
from .size import DEFAULT_PERSISTENCE_THRESHOLD, upper_bound
from .skeleton import ClassSpan, FunctionSpan, Skeleton
from .tree import Snippet, access_path, call_name, const_str, dotted, parse_snippet, walk

if TYPE_CHECKING:
    from .project import Project

__all__ = ["Kind", "Member", "ClassFacts", "ClassInfo", "MethodInfo", "ModelIndex", "ACTIVATION", "UNKNOWN_CLASS", "entry_name"]

ACTIVATION = "<activation>"  # class of a module from an activation registry (no parameters)
UNKNOWN_CLASS = "<unknown>"  # a member assigned from something we cannot see (an argument)

_PARAM_DEF = re.compile(
    r"self\.(\w+)\s*(?::[^=\n]*)?=\s*(?:[\w.]*\.)?Parameter(?:List|Dict)?\(|register_parameter\(\s*[\"'](\w+)"
)
# `self.name = nn.Parameter(<args>)` with what it is built from (to tell a scalar from a table).
_LARGE_PARAM_DEF = re.compile(r"self\.(\w+)\s*(?::[^=\n]*)?=\s*(?:[\w.]*\.)?Parameter\(([^\n]*)")
_SCALAR_PARAM_ARGS = re.compile(
    r"\s*(?:torch\.)?(?:tensor|scalar_tensor)\(|\s*(?:torch\.)?(?:ones|zeros|randn|rand|empty)\(\s*(?:1|\[\s*\]|\(\s*\)|\[\s*1\s*\]|\(\s*1\s*,\s*\))\s*\)"
)
_TORCH_PARAM_NAMES = frozenset(name for names in known.TORCH_PARAMS.values() for name in names)
# `nn.Parameter(torch.ones(dim))`: the argument of each Parameter(...) call, one level of parentheses.
_PARAM_CALL = re.compile(r"Parameter\(((?:[^()]|\([^()]*\))*)\)")
# A vector, also shaped with leading singleton dimensions (`torch.zeros(1, 1, dim)`, a class token).
_VECTOR_PARAM = re.compile(
    r"\s*torch\.(?:ones|zeros|empty|full|randn|rand)\(\s*(?:1\s*,\s*)*[\w.]+\s*(?:,\s*\w+\s*=\s*[\w.]+\s*)*\)\s*$"
)
_SCALAR_PARAM = re.compile(r"\s*torch\.tensor\((?:[^(),\[]|\([^()]*\))*\)\s*$")
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
_CONSTRUCTOR = re.compile(r"\b([A-Za-z_][\w.]*)\s*\(")
_RANK_ASSIGN = re.compile(
    r"self\.(\w+)\s*(?::[^=\n]*)?=[^=\n][^\n]*(?:get_rank|get_local_rank|local_rank|global_rank"
    r"|\bRANK\b|is_main_process|process_index)"
)
_ATTR_NOT_ON_SELF = re.compile(r"(?<!\bself)\.(\w+)")
_RNN_PARAM = re.compile(r"(?:weight|bias)_[ih]h_l\d")
_SELF_CALL = re.compile(r"\bself\s*\.\s*(\w+)\s*\(|\bsuper\(\)\s*\.\s*(\w+)\s*\(")


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

    @property
    def node(self) -> cst.FunctionDef | None:
        snip = self.snippet
        return snip.node if snip is not None and isinstance(snip.node, cst.FunctionDef) else None

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

    @cached_property
    def qualified_bases(self) -> tuple[str, ...]:
        return tuple(self.index.qualify(b) for b in self.span.bases)

    @cached_property
    def local_bases(self) -> tuple[ClassInfo, ...]:
        found = []
        for base in self.span.bases:
            info = self.index.classes.get(base)
            if info is not None and info is not self:
                found.append(info)
        return tuple(found)

    @cached_property
    def external_bases(self) -> tuple[tuple[ModelIndex, ClassInfo], ...]:
        """Bases defined in other files of the program, read from their source."""
        found = []
        for written, qualified in zip(self.span.bases, self.qualified_bases):
            if written in self.index.classes or _known_base(qualified):
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

    def reachable(self, root: str) -> list[MethodInfo]:
        """`root` and every method it reaches through `self.m(...)` / `super().m(...)` calls."""
        first = self.method(root)
        if first is None:
            return []
        found = [first]
        seen = {id(first)}
        i = 0
        while i < len(found):
            current = found[i]
            i += 1
            for match in _SELF_CALL.finditer(current.text):
                name = match.group(1) or match.group(2)
                if match.group(2):
                    target = _super_method(current.owner, name)
                else:
                    target = self.method(name)
                if target is not None and id(target) not in seen:
                    seen.add(id(target))
                    found.append(target)
        return found

    @cached_property
    def forward_methods(self) -> list[MethodInfo]:
        """The methods that run inside this module's forward (where its own parameters are gathered)."""
        return self.reachable("forward")

    @cached_property
    def init_methods(self) -> list[MethodInfo]:
        """`__init__` and the helpers it calls (`self._build_layers()`)."""
        return self.reachable("__init__")

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
                taken.update(id(m) for m in self.reachable(method.name))
        if self.method("forward") is None:  # forward inherited from another file calls this class's overrides
            names = self._inherited_forward_names()
            taken.update(id(m) for m in self.all_methods() if m.name in names)
        for sub in self.index.classes.values():  # a base class's helper that a subclass's forward calls
            if sub is not self and self in sub.mro:
                taken.update(id(m) for m in sub.forward_methods)
        called = self.index.forward_text()  # `self.decoder.decoder_query(x)`: part of another forward
        roots = [m for m in self.all_methods() if id(m) not in taken and f".{m.name}(" not in called]
        # A helper an initialiser shares with an entry point (`tie_weights` from `init_weights` and from
        # `resize_token_embeddings`) runs on the built model too, when the entry point calls it.
        found = {id(m) for m in roots}
        gathered = {id(m) for m in self.forward_methods} | {id(m) for m in self.init_methods}
        for root in roots:
            for method in self.reachable(root.name):
                if id(method) not in found and id(method) not in gathered and not _NOT_ENTRY.search(method.name):
                    found.add(id(method))
                    roots.append(method)
        return roots

    def _inherited_forward_names(self) -> set[str]:
        """Names of the methods an inherited `forward` of another file reaches through `self.m(...)` calls."""
        names: set[str] = set()
        todo = ["forward"]
        while todo and len(names) < 200:
            name = todo.pop()
            method = self.inherited_method(name)
            if method is None or name in names:
                continue
            names.add(name)
            todo.extend(m.group(1) or m.group(2) for m in _SELF_CALL.finditer(method.text))
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

    @cached_property
    def facts(self) -> ClassFacts:
        return self.index.class_facts(self)

    @cached_property
    def rank_attrs(self) -> frozenset[str]:
        """Attributes `__init__` sets from the process rank (`self.rank = dist.get_rank()`), read from text."""
        text = "".join(method.text for method in self.init_methods)
        return frozenset(m.group(1) for m in _RANK_ASSIGN.finditer(text))

    def __repr__(self) -> str:
        return f"ClassInfo({self.name})"


def _super_method(owner: ClassInfo, name: str) -> MethodInfo | None:
    for base in owner.local_bases:
        found = base.method(name)
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
    ) -> None:
        self.path = path
        self.source = source
        self.skeleton = skeleton
        self.imports = skeleton.imports
        # The other files of the program (None: this file alone), and this file's dotted module name.
        self.project = project
        self.module = module
        self.is_package = is_package
        # Parameters with fewer elements stay gathered under ZeRO-3 (the config's value when one is checked).
        self.persistence_threshold = DEFAULT_PERSISTENCE_THRESHOLD
        self.classes = {name: ClassInfo(span, self) for name, span in skeleton.classes.items()}
        self._snippets: dict[tuple[int, int], Snippet | None] = {}
        self._methods: dict[tuple[int, int], MethodInfo] = {}
        self._facts_stack: set[str] = set()
        self._facts_stack_returns: set[tuple[str, int, int]] = set()
        # Analyses built on the index (script scopes, ...) keep their results here.
        self.cache: dict[object, object] = {}

    # --- names -------------------------------------------------------------

    @cached_property
    def param_names(self) -> frozenset[str]:
        """Every name this file registers as a parameter, plus those torch.nn classes register."""
        names = set(_TORCH_PARAM_NAMES)
        names.update(m.group(1) or m.group(2) for m in _PARAM_DEF.finditer(self.source))
        return frozenset(names)

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
            for target in sorted(set(self.imports.values())):
                target = self.absolute(target) if target.startswith(".") else target
                if target.partition(".")[0] != own:
                    continue
                for module in (target, target.rsplit(".", 1)[0]):
                    other = self.project.index(module)
                    if other is not None and other is not self:
                        names.update(
                            m.group(1) for m in _LARGE_PARAM_DEF.finditer(other.source)
                            if not _SCALAR_PARAM_ARGS.match(m.group(2))
                        )
                        break
        return frozenset(names - _TORCH_PARAM_NAMES)

    def mentions_param(self, text: str) -> bool:
        """Does `text` access `<x>.<param>` for some `x` other than `self` (a possible submodule parameter)?"""
        names = set(_ATTR_NOT_ON_SELF.findall(text))
        return bool(names & self.param_names) or any(_RNN_PARAM.match(n) for n in names)

    def qualify(self, name: str) -> str:
        """Replace the first component of a dotted name by what it was imported as (absolute when known)."""
        head, _, rest = name.partition(".")
        target = self.imports.get(head)
        if target is None:
            if head in self.classes or head in self.skeleton.functions:
                return name
            target = known.CONVENTIONAL_ALIASES.get(head)
            if target is None:
                return name
        elif target.startswith("."):
            target = self.absolute(target)
        return f"{target}.{rest}" if rest else target

    def absolute(self, name: str) -> str:
        """`..layers.Mlp` written in this file as an absolute name, when this file's package is known."""
        level = len(name) - len(name.lstrip("."))
        if not level or not self.module:
            return name
        parts = self.module.split(".")
        if not self.is_package:
            parts = parts[:-1]
        if level - 1 > len(parts) or (level - 1 == len(parts) and not name[level:]):
            return name
        base = parts[: len(parts) - (level - 1)]
        rest = name[level:]
        return ".".join(base + [rest]) if rest else ".".join(base)

    def external(self, ref: str) -> tuple[ModelIndex, ClassInfo] | None:
        """The class of another file that a qualified class reference names, read from its source."""
        if self.project is None or "." not in ref or ref.startswith((".", "torch.")) or ref in self.classes:
            return None
        if ref.partition(".")[0] not in self.import_roots:
            return None  # `hidden.view`, `self.x`: not a name imported from another module
        module = ref.rsplit(".", 2)[-2]
        if module in _SHARED_MODELING or module in _NOT_MODULES:
            return None  # outputs, caches, configs, masks: large files that define no layers
        key = ("external", ref)
        if key not in self.cache:
            self.cache[key] = self.project.lookup(ref)
        return self.cache[key]  # type: ignore[return-value]

    @cached_property
    def import_roots(self) -> frozenset[str]:
        """Top-level packages this file's imports name (absolute), the only roots worth resolving."""
        return frozenset(self.absolute(target).partition(".")[0] for target in self.imports.values())

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
            self._snippets[key] = parse_snippet(text, span.start, span.indent)
        return self._snippets[key]

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

    def class_text(self, cls: ClassInfo) -> str:
        """The source of a class statement."""
        key = ("text", cls.name)
        if key not in self.cache:
            self.cache[key] = self.skeleton.text(cls.span.start, cls.span.end)
        return self.cache[key]  # type: ignore[return-value]

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
        if ref.partition(".")[0] not in self.import_roots or ref.rsplit(".", 2)[-2] in _NOT_MODULES:
            return None
        key = ("external-function", ref)
        if key not in self.cache:
            found = self.project.resolve(ref)
            info = found[0].function_info(found[1]) if found is not None else None
            self.cache[key] = (found[0], info) if info is not None else None
        return self.cache[key]  # type: ignore[return-value]

    def returns(self, function: MethodInfo, call: cst.Call, caller: _FactsReader) -> tuple[Kind, tuple[str, ...]]:
        """What `call` of a factory function or builder method returns: a module and its classes, or a value.

        The function's `return` values are classified with what its body bound
        (`m = nn.Linear(...); nn.init.normal_(m.weight); return m`); returning one of
        its parameters returns the caller's argument (`quant_noise(module, p)`).
        """
        key = ("returns", function.span.start, function.span.end)
        if key in self._facts_stack_returns:
            return Kind.VALUE, ()
        if key not in self.cache:
            self._facts_stack_returns.add(key)
            try:
                self.cache[key] = self._returns(function)
            finally:
                self._facts_stack_returns.discard(key)
        kind, classes, param = self.cache[key]  # type: ignore[misc]
        if param is not None:
            arg = _argument(call, *param)
            return caller.classify(arg) if arg is not None else (Kind.VALUE, ())
        return kind, tuple(self.global_name(c) for c in classes) if caller.index is not self else classes

    def returns_tuple(self, function: MethodInfo, n: int) -> list[tuple[Kind, tuple[str, ...]]]:
        """Kinds and classes of the elements of `return a, b` in `function`, if it returns an n-tuple."""
        key = ("returns-tuple", function.span.start, function.span.end, n)
        if key in self._facts_stack_returns:
            return []
        if key not in self.cache:
            self._facts_stack_returns.add(key)
            try:
                self.cache[key] = self._returns_tuple(function, n)
            finally:
                self._facts_stack_returns.discard(key)
        return self.cache[key]  # type: ignore[return-value]

    def _returns_tuple(self, function: MethodInfo, n: int) -> list[tuple[Kind, tuple[str, ...]]]:
        node = function.node
        if node is None or "return" not in function.text:
            return []
        reader = _FactsReader(self, ClassFacts(), function, 0, function.owner)
        reader.read()
        for stmt in walk(node.body):
            if isinstance(stmt, cst.Return) and isinstance(stmt.value, cst.Tuple) and len(stmt.value.elements) == n:
                out = []
                for element in stmt.value.elements:
                    kind, classes = reader.classify(element.value)
                    out.append((kind, classes))
                return out
        return []

    def _returns(self, function: MethodInfo) -> tuple[Kind, tuple[str, ...], tuple[int, str] | None]:
        node = function.node
        if node is None or not function.text.count("return"):
            return Kind.VALUE, (), None
        reader = _FactsReader(self, ClassFacts(), function, 0, function.owner)
        reader.read()
        kind, classes = Kind.VALUE, ()
        for stmt in walk(node.body):
            if not isinstance(stmt, cst.Return) or stmt.value is None:
                continue
            value = stmt.value
            if isinstance(value, cst.Name) and value.value in reader.params and value.value not in reader.locals:
                position = reader.params.index(value.value)
                if function.owner is not None:
                    position -= 1  # `self`
                return Kind.VALUE, (), (position, value.value)
            k, c = reader.classify(value)
            if k > kind or (k == kind and c):
                kind, classes = max(k, kind), classes + tuple(x for x in c if x not in classes)
        return kind, classes, None

    # --- classes -----------------------------------------------------------

    def is_module_class(self, cls: ClassInfo, seen: set[str]) -> bool:
        if cls.name in seen:
            return False
        seen.add(cls.name)
        for written, qualified in zip(cls.span.bases, cls.qualified_bases):
            local = self.classes.get(written)
            if local is not None and local is not cls:
                if self.is_module_class(local, seen):
                    return True
                continue
            if self.is_module_base(qualified):
                return True
        return False

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

    def forward_text(self) -> str:
        """The text of every method run in a forward, with `self.` calls masked: `.name(` in it is a call
        of `name` on another object (`self.codebook.lookup(x)`)."""
        key = "forward-text"
        found = self.cache.get(key)
        if found is None:
            seen: set[int] = set()
            texts = []
            for cls in self.module_classes():
                for method in cls.forward_methods:
                    if id(method) not in seen:
                        seen.add(id(method))
                        texts.append(method.text)
            found = self.cache[key] = re.sub(r"\bself\.(?=\w+\s*\()|\(\)\.", "~", "\n".join(texts))
        return found  # type: ignore[return-value]

    def module_classes(self) -> list[ClassInfo]:
        return [c for c in self.classes.values() if c.is_module]

    def methods(self, scope: str, trigger=None) -> Iterator[tuple[ClassInfo, MethodInfo]]:
        """(class, method) pairs of module classes whose text matches `trigger`.

        `scope` is `forward` (methods run inside forward), `init` (`__init__`
        and its helpers) or `all` (every method). A method inherited by several
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
            else:
                candidates = cls.all_methods()
            for method in candidates:
                if trigger is None or trigger.search(method.text):
                    yield cls, method

    def classify(self, expr: cst.BaseExpression, resolve: bool = False) -> tuple[Kind, tuple[str, ...]]:
        """What an expression would make if assigned to `self.x` in `__init__` (module, parameter, ...).

        Only this file and torch are read unless `resolve` (factory functions of other files too)."""
        reader = _FactsReader(self, ClassFacts(), None, 0)  # type: ignore[arg-type]
        reader.resolve = resolve  # a local in any method: by default no other files
        return reader.classify(expr)

    def class_facts(self, cls: ClassInfo) -> ClassFacts:
        if cls.name in self._facts_stack:  # a class whose __init__ builds itself
            return ClassFacts()
        self._facts_stack.add(cls.name)
        try:
            facts = ClassFacts()
            for base in reversed(cls.external_bases):
                _merge(facts, _global_facts(*base))
            for base in reversed(cls.local_bases):
                _merge(facts, base.facts)
            for rank, method in enumerate(cls.init_methods):
                if method.owner is cls or method.owner not in cls.local_bases:
                    _FactsReader(self, facts, method, rank, cls).read()
            return facts
        finally:
            self._facts_stack.discard(cls.name)

    # --- what a class reference is -----------------------------------------

    def class_of(self, ref: str) -> ClassInfo | None:
        """The in-file class a member's class reference names, if any."""
        return self.classes.get(ref)

    def has_params(self, ref: str) -> bool | None:
        """Does a module of class `ref` own parameters (itself or below)? None: cannot tell.

        Answered from the text of the class's `__init__` (and what it calls),
        following constructor calls of classes in the file, so asking about a
        child class does not parse it.
        """
        if ref == ACTIVATION:
            return False
        if ref == UNKNOWN_CLASS:
            return None
        local = self.classes.get(ref)
        if local is not None:
            key = ("has_params", ref)
            if key not in self.cache:
                self.cache[key] = False  # a class that builds itself: no answer from the cycle
                self.cache[key] = self._local_has_params(local)
            return self.cache[key]  # type: ignore[return-value]
        answer = _external_has_params(ref)
        if answer is None:
            external = self.external(ref)
            if external is not None:
                return external[0].has_params(external[1].name)
        return answer

    def gathers(self, ref: str) -> bool:
        """Does calling a module of class `ref` (possibly) all-gather parameters?

        False for modules without parameters and for norm layers, whose 1-D
        parameters stay gathered under ZeRO-3's default persistence threshold
        (`stage3_param_persistence_threshold`, 1e5 elements).
        """
        if self.has_params(ref) is False:
            return False
        local = self.classes.get(ref)
        if local is None:
            external = self.external(ref)
            if external is not None:
                return external[0].gathers(external[1].name)
        if local is not None:
            text = "".join(method.text for method in local.init_methods)
            params = _PARAM_CALL.findall(text)
            return not (
                params and all(_VECTOR_PARAM.match(p) for p in params) and not self._builds_gathering(local, text)
            )
        return ref.rsplit(".", 1)[-1] not in known.NORMS

    def persistent_param(self, ref: str, name: str) -> bool:
        """Is parameter `name` of class `ref` small enough that ZeRO-3 keeps it gathered (a norm
        weight, a 1-D vector, a scalar)? Judged from how `__init__` creates it."""
        local = self.classes.get(ref)
        if local is None:
            external = self.external(ref)
            if external is not None:
                return external[0].persistent_param(external[1].name, name)
            return ref.rsplit(".", 1)[-1] in known.NORMS
        if not self.gathers(ref):
            return True
        base = self.torch_base(local)
        if base is not None and name not in local.facts.members:
            # a torch layer's own parameter (`class Linear(nn.Linear)`): its bias and a norm's weight are vectors
            return base in known.NORMS or name.startswith("bias")
        text = "".join(method.text for method in local.init_methods)
        match = re.search(r"self\." + re.escape(name) + r"\s*(?::[^=\n]*)?=\s*(?:[\w.]*\.)?Parameter\(", text)
        if match is None:
            return False
        inner = _PARAM_CALL.match(text, match.end() - len("Parameter("))
        vector = bool(inner) and bool(_VECTOR_PARAM.match(inner.group(1)) or _SCALAR_PARAM.match(inner.group(1)))
        return vector or bool(_SIZED_VECTOR.match(text, match.end()))

    def _builds_gathering(self, cls: ClassInfo, text: str) -> bool:
        for written in set(_CONSTRUCTOR.findall(text)):
            if written in self.classes and written != cls.name and self.classes[written].is_module:
                if self.gathers(written):
                    return True
            elif written[:1].isupper() or "." in written:
                qualified = self.qualify(written)
                if known.is_torch_module_class(qualified) and _external_has_params(qualified):
                    if qualified.rsplit(".", 1)[-1] not in known.NORMS:
                        return True
                elif self.external(qualified) is not None and self.is_module_base(qualified):
                    if self.gathers(qualified):
                        return True
        return False

    def torch_base(self, cls: ClassInfo) -> str | None:
        """The last name of a torch.nn layer class that `cls` (or an in-file base) derives from (`Embedding`)."""
        for info in cls.mro:
            for base in info.qualified_bases:
                last = base.rsplit(".", 1)[-1]
                if known.is_torch_module_class(base) and last in known.TORCH_PARAMS:
                    return last
        return None

    def _local_has_params(self, cls: ClassInfo) -> bool | None:
        if not cls.is_module:
            return False
        if self.torch_base(cls) is not None:
            return True  # `class ScaledEmbedding(nn.Embedding)`: the base registers the weight
        text = "".join(method.text for method in cls.init_methods)
        if "Parameter(" in text or "ParameterList(" in text or "register_parameter" in text:
            return True
        answers: list[bool | None] = []
        for written in set(_CONSTRUCTOR.findall(text)):
            if written in self.classes:
                if self.classes[written].is_module:
                    answers.append(self.has_params(written))
                continue
            qualified = self.qualify(written)
            last = qualified.rsplit(".", 1)[-1]
            if last in known.ACTIVATION_FACTORIES or not last[:1].isupper():
                continue
            if known.is_torch_module_class(qualified) or last in known.TORCH_PARAMS:
                answer = _external_has_params(qualified)
                if answer is not None:
                    answers.append(answer)
            elif self.is_module_base(qualified):
                answers.append(self.has_params(qualified) if self.external(qualified) else None)
        if True in answers:
            return True
        return None if None in answers else False

    def member_param(self, ref: str, name: str) -> bool | None:
        """Is `name` a parameter registered directly on a module of class `ref`? None: cannot tell."""
        local = self.classes.get(ref)
        if local is not None:
            member = local.facts.members.get(name)
            if member is None:
                base = self.torch_base(local)
                return base is not None and known.torch_params(base, name)
            return member.kind == Kind.PARAM
        external = self.external(ref)
        if external is not None:
            return external[0].member_param(external[1].name, name)
        last = ref.rsplit(".", 1)[-1]
        if ref.startswith("torch.nn.") or last in known.TORCH_PARAMS:
            return known.torch_params(last, name)
        if ref == ACTIVATION:
            return False
        return None

    def member_of(self, ref: str, name: str) -> Member | None:
        """The member `name` of class `ref` when the class is in this file (or a known torch child)."""
        local = self.classes.get(ref)
        if local is not None:
            return local.facts.members.get(name)
        external = self.external(ref)
        if external is not None:
            found = external[0].member_of(external[1].name, name)
            if found is None:
                return None
            classes = tuple(external[0].global_name(c) for c in found.classes)
            return Member(found.name, found.kind, classes, (-1, 0))
        last = ref.rsplit(".", 1)[-1]
        if last == "MultiheadAttention" and name == "out_proj":
            return Member(name, Kind.MODULE, ("torch.nn.Linear",))
        return None


def _external_has_params(ref: str) -> bool | None:
    last = ref.rsplit(".", 1)[-1]
    if last in known.PARAMLESS:
        return False
    if last in {"ModuleList", "ModuleDict", "Sequential"}:
        return None
    if ref.startswith("torch.nn.") or last in known.TORCH_PARAMS:
        return True
    return None


def _known_base(qualified: str) -> bool:
    last = qualified.rsplit(".", 1)[-1]
    return last in known.MODULE_BASE_NAMES or known.is_torch_module_class(qualified) or last in {"object", "Generic"}


def _argument(call: cst.Call, position: int, name: str) -> cst.BaseExpression | None:
    """The argument a call passes for a parameter (by keyword, else by position)."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[position].value if 0 <= position < len(positional) else None


def _global_facts(index: ModelIndex, cls: ClassInfo) -> ClassFacts:
    """The facts of another file's class, with its class references made absolute."""
    facts = cls.facts
    out = ClassFacts(elements=tuple(index.global_name(c) for c in facts.elements), external=facts.external,
                     ties=facts.ties, lambdas=dict(facts.lambdas))
    for name, member in facts.members.items():
        out.members[name] = Member(name, member.kind, tuple(index.global_name(c) for c in member.classes), member.order)
    return out


def _merge(into: ClassFacts, base: ClassFacts) -> None:
    for name, member in base.members.items():
        into.members[name] = Member(member.name, member.kind, member.classes, (-1, member.order[1]))
    into.elements += base.elements
    into.external |= base.external
    into.ties += base.ties
    for name, body in base.lambdas.items():
        into.lambdas.setdefault(name, body)


_CONTAINERS = {"ModuleList", "ModuleDict", "Sequential"}
_PARAM_CONTAINERS = {"ParameterList", "ParameterDict"}


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
        self.env: dict[str, int] = {}  # upper bounds of integer parameters and locals (`hd=256`)
        self._unbounded: set[str] = set()
        self._clamps: set[int] = set()  # targets of `if n > limit: n = limit`
        self._depth = 0  # nesting of callables followed (`a = partial(b)`, `b = partial(a)`)
        self.resolve = True  # read other files for imported classes and factory functions

    def read(self) -> None:
        node = self.method.node
        if node is None:
            return
        self._parameters(node)
        order = self.method.order
        for stmt in walk(node.body):
            if isinstance(stmt, cst.If):
                self._clamps.update(_clamp_assigns(stmt))
            elif isinstance(stmt, cst.BaseSmallStatement):
                self._statement(stmt, (self.rank, order[id(stmt)]))

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
            if _LAYER_PARAM.search(name):
                self.layer_params.add(name)
            if isinstance(default, cst.Integer):
                self.env[name] = int(default.evaluated_value)
            elif _negative_literal(default):  # `groups=-1`: a sentinel meaning "choose for me"
                self.env[name] = -int(default.expression.evaluated_value)  # type: ignore[union-attr]

    def _statement(self, node: cst.CSTNode, order: tuple[int, int]) -> None:
        if isinstance(node, cst.Assign):
            for target in node.targets:
                self._assign(target.target, node.value, order)
        elif isinstance(node, cst.AnnAssign) and node.value is not None:
            self._assign(node.target, node.value, order)
        elif isinstance(node, cst.Expr) and isinstance(node.value, cst.Call):
            self._call(node.value, order)

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
                for t, (kind, classes) in zip(target.elements, returned):
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
            source = access_path(value) if isinstance(value, cst.Attribute) else None
            if source is not None and len(source.parts) == 1 and source.root in self.locals:
                kind, classes = self.locals[source.root]
                if kind == Kind.MODULE and value.attr.value in self.index.param_names:  # type: ignore[union-attr]
                    self.facts.borrowed[path.parts[0]] = (source.root, classes, source.parts[0])
            kind, classes = self.classify(value)
            self._set(path.parts[0], kind, classes, order)
            member = self.facts.members[path.parts[0]]
            if member.order == order and isinstance(value, cst.Call):
                member.call, member.env = value, dict(self.env)
            return
        source = access_path(value)
        if source is not None and source.root == "self" and "[]" not in path.parts:
            self.facts.ties += ((".".join(path.parts), ".".join(source.parts)),)

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
            if method in {"append", "extend", "insert"} and args:
                kind, classes = self.classify(args[-1].value)
                old_kind, old_classes = self.locals.get(local, (Kind.VALUE, ()))
                if kind in (Kind.MODULE, Kind.CONTAINER):
                    self.locals[local] = (max(old_kind, Kind.CONTAINER), old_classes + classes)

    def classify(self, value: cst.BaseExpression) -> tuple[Kind, tuple[str, ...]]:
        """What kind of member an expression assigned to `self.x` makes."""
        if isinstance(value, cst.Call):
            return self._classify_call(value)
        if isinstance(value, cst.IfExp):
            a = self.classify(value.body)
            b = self.classify(value.orelse)
            return max(a[0], b[0]), a[1] + tuple(c for c in b[1] if c not in a[1])
        if isinstance(value, cst.Subscript):
            base = dotted(value.value)
            if base is not None and base.rsplit(".", 1)[-1] in known.ACTIVATION_FACTORIES:
                return Kind.MODULE, (ACTIVATION,)
            if base in self.params and _MODULES_ARG.search(base):
                return Kind.UNKNOWN, (UNKNOWN_CLASS,)  # `self.model = modules[0]`: one of the modules passed in
            return Kind.VALUE, ()
        if isinstance(value, cst.Name):
            if value.value in {"None", "True", "False"}:
                return Kind.VALUE, ()
            if value.value in self.locals:
                return self.locals[value.value]
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

    def _classify_call(self, call: cst.Call) -> tuple[Kind, tuple[str, ...]]:
        func = call.func
        if isinstance(func, cst.Call) and _is_partial(func) and func.args:
            return self._classify_callable(func.args[0].value, call)  # partial(nn.Linear, bias=False)(d, d)
        if isinstance(func, cst.Attribute) and func.attr.value in _RETURNS_SELF and isinstance(func.value, cst.Call):
            kind, classes = self._classify_call(func.value)  # nn.Conv2d(...).requires_grad_(False): the module
            if kind in (Kind.MODULE, Kind.CONTAINER):
                return kind, classes
        written = call_name(call)
        if written is None or written.startswith("."):
            return Kind.VALUE, ()
        if written in self.callables:
            return self._classify_callable(self.callables[written], call)
        if written in self.layer_params:
            return Kind.UNKNOWN, (UNKNOWN_CLASS,)  # norm_layer(dim): a layer class passed in
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
        qualified = self.index.qualify(written)
        last = qualified.rsplit(".", 1)[-1]
        if last == "Parameter":
            return Kind.PARAM, ()
        if last in _PARAM_CONTAINERS:
            return Kind.PARAM, ()
        if last in _CONTAINERS and (known.is_torch_module_class(qualified) or written == last):
            classes: tuple[str, ...] = ()
            for arg in call.args:
                classes += self._elements(arg.value)
            return Kind.CONTAINER, classes
        if last in known.REPARAMETRIZE and call.args:
            return self.classify(call.args[0].value)
        if last in known.ACTIVATION_FACTORIES:
            return Kind.MODULE, (ACTIVATION,)
        local = self.index.classes.get(written)
        if local is not None:
            return (Kind.MODULE, (written,)) if local.is_module else (Kind.VALUE, ())
        if known.is_torch_module_class(qualified):
            return Kind.MODULE, (qualified,)
        if last in known.TORCH_PARAMS:
            return Kind.MODULE, (last,)
        if last[:1].isupper() and self.index.is_module_base(qualified, self.resolve):
            return Kind.MODULE, (qualified,)
        if written in {"copy.deepcopy", "deepcopy"} and call.args:
            return self.classify(call.args[0].value)
        if "." not in written and written in self.index.skeleton.functions:
            return self._returned(self.index.function_info(written), call)  # def Linear(...): ...; return m
        if not last[:1].isupper():
            external = self.index.external_function(qualified) if self.resolve else None
            if external is not None:
                kind, classes = external[0].returns(external[1], call, self)
                return kind, classes
            if call.args and call.args[0].keyword is None:
                # quant_noise(nn.Linear(...), p): a wrapper we cannot read returns the module it was given
                kind, classes = self.classify(call.args[0].value)
                if kind in (Kind.MODULE, Kind.CONTAINER):
                    return kind, classes
        return Kind.VALUE, ()

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

    def _returned_tuple(self, call: cst.Call, n: int) -> list[tuple[Kind, tuple[str, ...]]]:
        """What a function of this or another file returns as an `n`-tuple, element by element (else [])."""
        written = call_name(call)
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
        returned = owner.returns_tuple(function, n)
        if owner is self.index:
            return returned
        return [(kind, tuple(owner.global_name(c) for c in classes)) for kind, classes in returned]

    def _returned(self, method: MethodInfo | None, call: cst.Call) -> tuple[Kind, tuple[str, ...]]:
        if method is None:
            return Kind.VALUE, ()
        return self.index.returns(method, call, self)

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
            return self._elements(value.args[0].value)
        if isinstance(value, cst.Name) and value.value in self.locals:
            kind, classes = self.locals[value.value]
            return classes if kind in (Kind.MODULE, Kind.CONTAINER) else ()
        return self._module_classes(value)

    def _module_classes(self, value: cst.BaseExpression) -> tuple[str, ...]:
        if isinstance(value, cst.Tuple) and len(value.elements) == 2:  # OrderedDict([("name", Mod())])
            value = value.elements[1].value
        kind, classes = self.classify(value)
        return classes if kind in (Kind.MODULE, Kind.CONTAINER, Kind.UNKNOWN) else ()


# Methods that are not entry points on a partitioned model: initialisation, hooks, (de)serialisation.
_NOT_ENTRY = re.compile(
    r"^__\w+__$|init|reset|^_?(?:load|save)_?|state_dict|^_?(?:pre_)?hook|gather|zero_?\d|zero_grad|is_zero|zero_?init|deepspeed|^extra_repr$"
    r"|^_?apply$|^_?build|^_?make|^_?create|^_?setup"
    r"|^_?forward_?\w"  # forward variants (`forward_features`, `forward_intermediates`) compute like forward
)


def entry_name(name: str) -> bool:
    """Could a method or function of this name be called on a built model (not an initialiser, hook, loader)?"""
    return not _NOT_ENTRY.search(name)


_NOT_A_MODEL_FACTORY = re.compile(r"Token|Config|config|Processor|Extractor|Scheduler|Dataset|Pipeline")
_MODULES_ARG = re.compile(r"module|model|layer|block|net|encoder|decoder")
# nn.Module methods that return the module itself, so `nn.Linear(...).to(device)` is still that Linear.
_RETURNS_SELF = frozenset(
    {"requires_grad_", "to", "cuda", "cpu", "half", "float", "double", "bfloat16", "type", "train", "eval", "apply",
     "share_memory", "to_empty"}
)
# Initialisers and builders by name (the part of `_NOT_ENTRY` that is about setting weights up) ...
_LATE_INIT = re.compile(r"init|reset|^_?build|^_?make|^_?create|^_?setup|^_?zero_")
# ... less dunders, state-dict, hook, load/save and gather helpers.
_NOT_LATE_INIT = re.compile(
    r"^__\w+__$|state_dict|^_?(?:load|save)_?|^_?(?:pre_)?hook|gather|deepspeed|zero3|^_?apply$|_fn$|_func$"
)
# `def _init_weights(self, module)` / a static `def _init(module, name)`: called on each module a walk visits.
_VISITS_A_MODULE = re.compile(r"^\s*(?:@[^\n]*\n\s*)*def \w+\(\s*(?:self\s*,\s*)?(?:module|m|mod|layer|submodule|cell|model)\b")


def _visits_a_module(text: str) -> bool:
    return _VISITS_A_MODULE.match(text) is not None
_ALT_CONSTRUCTOR = re.compile(r"^_?from_\w+$")
_LAYER_PARAM = re.compile(r"(?:^|_)(?:layer|block|module|cls|class|norm|act)(?:_(?:fn|cls|class|type|factory))?$")


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


# More vectors: a length that is a call's value (`torch.zeros(w.size(0))`, `len(vocab)`; not `w.size()`), singleton
# dimensions around it (`torch.ones(dim, 1, 1)`), and a scale in front (`init_values * torch.ones(dim)`, a layer scale).
_SIZED_VECTOR = re.compile(
    r"\s*(?:[\w.+-]+\s*\*\s*)?torch\.(?:ones|zeros|empty|full|randn|rand)\(\s*(?:1\s*,\s*)*"
    r"[\w.]+(?:\([\w.]+\))?\s*(?:,\s*1\s*)*\)\s*\)"
)
