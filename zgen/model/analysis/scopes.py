"""Parameter accesses by scope: where each runs, and so what ZeRO-3 has partitioned there.

`param_accesses(index, *scopes)` is what the ZG1xx rules filter: the
accesses of module methods placed in their class's life (`scoped_accesses`:
`FORWARD`, `INIT`, `ENTRY`, `LATE`, leaving out guarded sites, modules built
in the method itself, parameters ZeRO-3 keeps gathered, and in `__init__`
submodules not built yet), of code a built model is handed to (`HANDED`,
`BUILT`, from `handed.py`) and of training scripts (`SCRIPT`, `script.py`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import replace

from ..program.holds import module_like_name
from ..program.index import ClassInfo, MethodInfo, ModelIndex, memoised, registered_names
from ..program.members import UNKNOWN_CLASS, Kind, facts_of, holds_parameter_containers, parameter_container
from ..program.tree import cst, dotted, walk
from ..program.trigger import LOCAL_CONSTRUCTION
from .access import INIT, READ, SIZE, WRITE, ParamAccess, Reach, Scope
from .flow import flat_of, runs_gathered
from .handed import built_accesses, handed_accesses
from .instances import partitioned_param, receiver_instance
from .own import calls_child_method, calls_inherited_method, method_call_accesses
from .params import NOT_A_SUBMODULE, accesses, kept_parameter_lists, layer_base_params, property_container
from .persistence import kept_gathered
from .reach import function_target
from .script import script_accesses

__all__ = ["param_accesses", "scoped_accesses", "inherited_walks"]


def param_accesses(index: ModelIndex, *scopes: Scope) -> Iterator[ParamAccess]:
    """Every parameter access of the file in `scopes`, scope by scope in the order given."""
    for scope in scopes:
        if scope is Scope.HANDED:
            yield from handed_accesses(index)
        elif scope is Scope.BUILT:
            yield from built_accesses(index)
        elif scope is Scope.SCRIPT:
            yield from script_accesses(index)
        else:
            yield from scoped_accesses(index, scope)


@memoised
def scoped_accesses(index: ModelIndex, scope: Scope) -> list[ParamAccess]:
    """The parameter accesses of module methods in `scope` (`FORWARD`, `INIT`, `ENTRY` or `LATE`) that touch a
    parameter partitioned there.

    `ENTRY` is the methods a training loop calls on the built model (`ClassInfo.entry_methods`),
    where every parameter is partitioned just as outside a forward; `LATE` is the initialisers
    that someone else runs on the built module (`ClassInfo.late_init_methods`), where every
    child is built. In `INIT` only accesses after the submodule was built count: under
    `deepspeed.zero.Init` a submodule is partitioned as soon as its own `__init__` returns, so
    the parent's `__init__` sees placeholders from then on. Guarded sites (inside
    `GatheredParameters`, or under a zero3/synced_gpus test) are left out everywhere.
    """
    found = []
    for cls, method in index.methods(scope.value):
        counts = None
        if _worth_reading(index, scope, cls, method):
            counts = _counts_in(index, scope, cls, method)
            found += [replace(a, scope=scope) for a in accesses(index, cls, method) if not a.ctx.guarded and counts(a)]
        if calls_child_method(index, method.text) or (
            scope is Scope.INIT and calls_inherited_method(cls, method.text)  # `self.reset_parameters()` of a base
        ):
            # `self.gru.reset_parameters()`, `m.sample()`: a submodule's own method that writes or sizes its parameters
            # (in a forward, what it writes: `layer.reset_parameters()` there re-initialises a child its hooks have
            # not gathered; sizes read there are ZG3's business)
            counts = counts or _counts_in(index, scope, cls, method)
            found += [
                replace(a, scope=scope) for a in method_call_accesses(index, cls, method)
                if not a.ctx.guarded and counts(a) and (scope is not Scope.FORWARD or a.use in (WRITE, INIT))
            ]
    if scope is Scope.ENTRY:
        # `__repr__`/`extra_repr` run when the built model is printed: the values they read and the sizes they
        # print are the placeholders' (`shape=(0,)`), and so is a count summed over a walk of the parameters
        for cls, method in index.methods("repr"):
            if not _worth_reading(index, scope, cls, method):
                continue
            counts = _counts_in(index, scope, cls, method)
            found += [replace(a, scope=scope) for a in accesses(index, cls, method)
                      if a.use in (READ, SIZE) and not a.ctx.guarded and counts(a)]
    return found




@memoised
def inherited_walks(index: ModelIndex) -> tuple[tuple[cst.Call, ClassInfo, MethodInfo, ParamAccess], ...]:
    """Calls `self.m()` in a module's forward of a method that only a base of another file defines (a mixin's
    momentum update), which walks parameters of this class's children (`for a, b in self.model_pairs:` ...
    `zip(a.parameters(), b.parameters())`): its lines are in the other file, read with this class's members
    (`params.accesses`), so the reads are reported at the call. Each: (the call, class, forward method, first read)."""
    found = []
    for cls, method in index.methods("forward", _SELF_CALL):
        if not any(_inherited_walker(cls, m[1]) for m in _SELF_CALL.finditer(method.text)):
            continue  # (the text decides first: most forwards call only their children)
        flat = flat_of(method)
        for node, ctx in flat.nodes if flat is not None else ():
            if type(node) is not cst.Call or ctx.guarded or not isinstance(node.func, cst.Attribute):
                continue
            owner = node.func.value
            if not (isinstance(owner, cst.Name) and owner.value == "self"):
                continue
            name = node.func.attr.value
            helper = _inherited_walker(cls, name)
            if helper is None:
                continue
            walked = [a for a in accesses(index, cls, helper) if a.use in (READ, WRITE) and not a.ctx.guarded
                      and a.via is not None and a.via.reach is Reach.PARAMETERS and not a.local
                      and not a.via.name.startswith("self.parameters")]
            if walked:
                found.append((node, cls, method, walked[0]))
    return tuple(found)


def _inherited_walker(cls: ClassInfo, name: str) -> MethodInfo | None:
    """The method `name` when only a base of another file defines it and its text walks parameters."""
    helper = cls.inherited_method(name) if cls.method(name) is None else None
    return helper if helper is not None and "parameters(" in helper.text else None


_SELF_CALL = re.compile(r"\bself\.(\w+)\(")


def _worth_reading(index: ModelIndex, scope: Scope, cls: ClassInfo, method: MethodInfo) -> bool:
    """The text pre-filter: can `method` touch a partitioned parameter in `scope`? (Decides what is parsed.)"""
    text = method.text
    may = _may_access(index, method)
    if scope is Scope.FORWARD:
        return (may or _mentions_helper(index, cls, text) or _mentions_kept_parameters(index, cls, text)
                or _hands_argument(index, text))
    if scope is Scope.INIT:
        return may or _hands_module(text) or _HANDS_OWN.search(text) is not None or _hands_made_to_walker(index, text) \
            or _hands_built_local(text)
    hands = scope in (Scope.LATE, Scope.ENTRY) and (_hands_module(text) or _HANDS_OWN.search(text) is not None)
    if not (may or hands or scope is Scope.ENTRY and _mentions_own_param(index, cls, text)):
        return False
    if not hands and not _ENTRY_USES.search(text) and not _ENTRY_READS.search(text) and not (
        scope is Scope.ENTRY and (
            _reads_own_value(index, cls, text) or _OWN_WALK.search(text) or _reads_child_value(index, text)
        )
    ):
        return False  # only writes, size queries and values computed with: no need to parse a plain reader
    return scope is Scope.LATE or not runs_gathered(cls, method)


def _counts_in(index: ModelIndex, scope: Scope, cls: ClassInfo, method: MethodInfo) -> Callable[[ParamAccess], bool]:
    """Which accesses of `method` touch a parameter that is partitioned there."""
    if scope is Scope.INIT:
        rank = next((i for i, m in enumerate(cls.init_methods) if m is method), 0)
        helpers = _helper_call_positions(index, cls) if rank == 0 else {}
        # `self.to_logits = lambda t: t @ self.emb.weight.t()` runs later, in forward
        return lambda a: _built_before(a, rank, helpers) and not _deferred(method, a.node)
    given = _arguments(method) if scope is Scope.LATE else frozenset()
    # `ENTRY`, `LATE`: run by the training loop, outside any forward (but a property a forward reads runs there)
    in_forward = scope is Scope.FORWARD or scope is Scope.ENTRY and _read_in_forward(index, method)

    def counts(a: ParamAccess) -> bool:
        if a.local:
            return False  # a module the method built itself: not partitioned
        if a.first is not None and a.first.name in given:
            return False  # a module the caller hands over (and may have gathered): judged at that call
        # small enough that ZeRO-3 keeps it gathered, and read in forward: reading it is free (writing is not)
        return a.use in (WRITE, INIT) or not (
            kept_gathered(index, a, in_forward) or (in_forward and _typed_kept(index, a))
        )

    return counts


def _typed_kept(index: ModelIndex, a: ParamAccess) -> bool:
    """A parameter of a child whose class the members cannot tell (`self.v` handed in, `v = self.heads["a"]`) that
    every class `instances` types the child as keeps gathered (`v.gain`, a vector)."""
    if any(ref != UNKNOWN_CLASS for ref in a.owner_classes) or a.cls is None or a.method is None:
        return False
    if not isinstance(a.node, cst.Attribute) or a.node.attr.value != a.param:
        return False
    instance = receiver_instance(index, a.cls, flat_of(a.method), a.node.value, 0, a.method)
    return instance is not None and partitioned_param(index, instance, a.param) is False


def _read_in_forward(index: ModelIndex, method: MethodInfo) -> bool:
    """Is `method` a property that some forward of the file reads (`h * self.scaled_bias`, no call)?"""
    node = method.node
    if node is None or not any(dotted(d.decorator) == "property" for d in node.decorators):
        return False
    return re.search(rf"\.{re.escape(method.name)}\b(?!\s*\()", index.forward_text) is not None


def _deferred(method: MethodInfo, node: cst.CSTNode) -> bool:
    """Is `node` inside a lambda stored by `method` (run later, not when `method` runs)?

    Only lambdas: a function nested in `__init__` is usually called right there (`init(self.conv)`).
    A lambda handed straight to a call (`self.apply(lambda m: ...)`) does run now, so only one
    assigned to something counts as deferred.
    """
    flat = flat_of(method)
    if flat is None:
        return False
    parent = flat.parent.get(id(node))
    while parent is not None:
        if isinstance(parent, cst.Lambda):
            holder = flat.parent.get(id(parent))
            return isinstance(holder, (cst.Assign, cst.AnnAssign))
        if isinstance(parent, cst.FunctionDef):
            return False
        parent = flat.parent.get(id(parent))
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
    r"|=\s*[\w.]+\.(?:weight|bias)\w*\s*$"  # bound to a local (`kernel = branch.conv.weight`)
    r"|\(\s*[\w.]+\.(?:weight|bias)\w*\s*[,)]",  # handed to a function first (`normalize_weight(layer.weight)`)
    re.MULTILINE,
)


# A value read computed with: a weight or bias as an operand (`self.fc.weight ** 2`, `w @ self.proj.weight`),
# or passed to a torch function (`torch.norm(self.proj.weight)`).
# `for p in self.parameters()`, `self.named_parameters()`: the module's own parameters walked (word first).
_OWN_WALK = re.compile(r"self(?<!\wself)\.(?:named_)?parameters\(")
_ENTRY_READS = re.compile(
    r"\.(?:weight|bias)\w*\s*(?:\*\*|[-+*/@%]\s*[\w(.])|[-+*/@%]\s*self\.[\w.]*\.(?:weight|bias)\b"
    r"|torch\.\w+\(\s*self\.[\w.]*(?:weight|bias)\w*\s*[,)]"
    r"|,\s*(?:\w+\s*=\s*)?[\w.]+\.(?:weight|bias)\w*\s*[,)]"  # a later argument: `F.linear(x, self.fc.weight)`, `w=...`
)


# `init_layer(self.conv1)`, `named_apply(fn, self)`, `init.initialize_head(self.head)` (a function of a module
# imported by name), `init([self.conv1, self.conv2])`: a module of `self` handed to a function.
_HANDS_SELF = re.compile(
    r"(?<![\w.])(?<!def )(?:(?!self\.|torch\.|[A-Z])[a-z_]\w*\.)?(?![A-Z])(?!(?:super|isinstance|issubclass|getattr|setattr|hasattr|delattr|len|print|type|id|str|repr|list"
    r"|tuple|dict|set|zip|enumerate|range|int|float|bool|iter|next|sorted|reversed|min|max|sum|any|all|callable"
    r"|vars|dir|format|hash)\()\w+\((?:[^()]*,\s*)?\(?\[?self(?!\.config\b)(?:\.\w+)*(?:\[[^\]]*\])?"
    r"(?:\.(?:modules|children)\(\))?\s*[\])]?\s*[,)]"
)


# `for emb in self.emb: init_layer(emb, ...)`: a submodule, by its loop variable, handed to a function.
_HANDS_ALIAS = re.compile(r"for (\w+) in [\[(]?\s*self\.[\s\S]*?(?<![\w.])[a-z_]\w*\(\s*\1\s*[,)]")


def _hands_built_local(text: str) -> bool:
    """Text test: a local bound to a construction handed first to a lower-case function (`normal_init(conv)`,
    `weight_init.c2_xavier_fill(lateral_conv)`)?"""
    return any(
        re.search(r"(?<![\w.])(?:[a-z_]\w*\.)*[a-z_]\w*\(\s*" + m.group(1) + r"\s*[,)]", text[m.end():])
        for m in LOCAL_CONSTRUCTION.finditer(text)  # (`conv = nn.Conv2d(c, d, 3)`)
    )


def _mentions_helper(index: ModelIndex, cls: ClassInfo, text: str) -> bool:
    """Does `text` use a stored lambda, a property or a base-class helper of `cls` that mentions a parameter, or a
    property of a module class of the file that does (`self.pos.table` for `@property def table(self): return
    self.linear.weight`)?"""
    return any(f"self.{name}" in text for name in _helper_names(index, cls)) or any(
        f".{name}" in text for name in _parameter_properties(index)
    )


@memoised
def _parameter_properties(index: ModelIndex) -> frozenset[str]:
    """Names of the properties of the file's module classes that return something of `self` (a parameter of
    theirs or of a child, which `params._property_parameter` decides from the parse)."""
    return frozenset(
        method.name for cls in index.module_classes() for method in cls.all_methods()
        if method.text.lstrip().startswith("@property") and "return self." in method.text
        or method.text.lstrip().startswith("@property") and index.mentions_param(method.text)
    ) if "@property" in index.source else frozenset()


def _mentions_kept_parameters(index: ModelIndex, cls: ClassInfo, text: str) -> bool:
    """Does `text` name a member of `cls` that holds other modules' parameters: a `ParameterList`/`ParameterDict` or
    a module container of them (`params._param_container_item`), or a list of a child's parameters
    (`params.kept_parameter_lists`)? The members are read only when the text names a candidate."""
    candidates = _kept_parameter_names(index, cls)
    if not candidates:
        return False
    if any(f"self.{name}" in text and property_container(index, cls, name) for name in cls.property_names):
        return True  # `self.weight_dict`, a property made of such a container
    if not any(f"self.{name}" in text for name in candidates):
        return False
    return any(
        f"self.{name}" in text and (
            parameter_container(index, cls, name) or holds_parameter_containers(cls, name)
            or name in kept_parameter_lists(index, cls)
        )
        for name in candidates
    )


@memoised
def _kept_parameter_names(index: ModelIndex, cls: ClassInfo) -> frozenset[str]:
    """Text pre-filter: attributes the class (or an in-file base) sets to a parameter container or to a list of
    parameters."""
    return frozenset(
        name for info in cls.mro if "Parameter" in info.text or "parameters(" in info.text
        for name in _KEPT_PARAMETERS.findall(info.text)
    )


# `self.w = nn.ParameterList(` (also annotated, `self.w: nn.Module = ...`), `self.t[k] = nn.ParameterDict(`,
# `self.ps = list(self.enc.parameters())`
_KEPT_PARAMETERS = re.compile(
    r"self(?<!\wself)\.(\w+)\s*(?:\[[^\]\n]*\])?\s*(?::[^=\n]*)?=\s*(?:[\w.]*\.)?(?:Parameter(?:List|Dict)\(|(?:list|tuple)\([^\n]*parameters\()"
)


@memoised
def _helper_names(index: ModelIndex, cls: ClassInfo) -> frozenset[str]:
    """Stored lambdas, properties, helpers returning `self.<...>` and base-class methods of `cls` that mention a
    parameter."""
    found = set(facts_of(cls).lambdas) if "lambda" in cls.text else set()
    for method in cls.all_methods():
        if method.text.lstrip().startswith("@property") and index.mentions_param(method.text):
            found.add(method.name)
        elif "return " in method.text and index.mentions_param(method.text):
            # may return a submodule's parameter as is (`shared_embedding_weight()`), or computed with, also
            # through a local (`w = self.wrapped.weight` ... `return w * self.mask`)
            found.add(method.name)
        elif "return " in method.text and "parameters(" in method.text:
            found.add(method.name)  # may return a collection of a child's parameters (`params._walks_returned`)
    for info in cls.mro:
        for base_index, base in info.external_bases:
            for method in base.all_methods():
                if method.name not in found and base_index.mentions_param(method.text):
                    found.add(method.name)
    return frozenset(found)


def _mentions_own_param(index: ModelIndex, cls: ClassInfo, text: str) -> bool:
    """Does `text` name `self.<p>` for a parameter `p` the class registers itself (partitioned in an entry method)?"""
    # From the text first: most classes register none, and their `__init__` stays unparsed.
    if not any(f"self.{name}" in text for name in _own_param_names(index, cls)):
        return False
    return any(
        member.kind == Kind.PARAM and not member.classes and f"self.{name}" in text
        for name, member in facts_of(cls).members.items()
    ) or any(f"self.{name}" in text for name in layer_base_params(index, cls))


def _reads_own_value(index: ModelIndex, cls: ClassInfo, text: str) -> bool:
    """Text pre-filter: does `text` use `self.<p>`, a parameter the class registers, other than by calling it,
    binding it or asking its dtype, device or size (`self.log_alpha.exp()`, `x + self.null_emb`)? Outside
    forward even a small one is a placeholder there."""
    names = [name for name in _own_param_names(index, cls) if f"self.{name}" in text]
    if not names:
        return False
    alternatives = "|".join(map(re.escape, sorted(names)))
    return re.search(rf"self(?<!\wself)\.(?:{alternatives})\b(?!\s*(?:\(|=[^=]|\.(?:{_META})\b))", text) is not None


def _reads_child_value(index: ModelIndex, text: str) -> bool:
    """Text pre-filter: does `text` use `<x>.<p>` (`x` not `self`), `p` a name this file or its package registers as
    a parameter, other than by calling it, binding it or asking its metadata (`torch.abs(self.layers[i].coef)`,
    `self.prior.log_std.exp()`)? A child's parameter of any name is a placeholder outside forward, not only a
    `weight` or a `bias` (`_ENTRY_USES`, `_ENTRY_READS`)."""
    names = {name for name in _ATTR_NOT_ON_SELF.findall(text)} & (index.param_names | index.related_param_names)
    if not names:
        return False
    alternatives = "|".join(map(re.escape, sorted(names)))
    # not called, bound, asked its metadata or walked past (`m.out_proj.weight.dtype`: a submodule of that name)
    return re.search(
        rf"\.(?<!\bself\.)(?:{alternatives})\b(?!\s*(?:\(|=[^=]|\.(?:{_META})\b|\.\w+\b(?!\s*\()))", text
    ) is not None


_ATTR_NOT_ON_SELF = re.compile(r"\.(?<!\bself\.)(\w+)")
_META = r"dtype|device|requires_grad|is_\w+|shape|size|numel|ndim|dim|grad"


@memoised
def _own_param_names(index: ModelIndex, cls: ClassInfo) -> frozenset[str]:
    return frozenset(name for info in cls.mro for name in registered_names(info.text) if name) | layer_base_params(index, cls)


# `zero_init(nn.Linear(d, d))`: a module built inline and handed straight to a function.
# A method of the class handed a child (`self.init_conv_(self.up[0], 4)`): in `__init__`, followed like a function's.
_HANDS_OWN = re.compile(r"self\.\w+\(\s*self\.\w+(?!\w*\()")
_HANDS_NEW = re.compile(r"(?<![\w.])(?:[a-z_]\w*\.)*[a-z_]\w*\(\s*(?:[a-z_]\w*\.)*[A-Z]\w*\(")


def _hands_module(text: str) -> bool:
    return bool(
        _HANDS_SELF.search(text) or ("for " in text and _HANDS_ALIAS.search(text)) or _HANDS_NEW.search(text)
        or _HANDS_CHILD.search(text)
    )


# `zero_module(conv_nd(2, c, c, 3))`: what a factory call returns, handed straight to a function.
_HANDS_MADE = re.compile(r"(?<![\w.])([a-z_]\w*)\(\s*(?:[a-z_]\w*\.)*[a-z_]\w*\(")


def _hands_made_to_walker(index: ModelIndex, text: str) -> bool:
    """Does `text` hand what a factory built (`conv_nd(...)`, no class named in it) to a function of the program
    that walks the parameters of what it is given (`zero_module`)? The module is partitioned once built."""
    if "(" not in text:
        return False
    for match in _HANDS_MADE.finditer(text):
        target = function_target(index, match.group(1))
        if target is not None and "parameters(" in target.text:
            return True
    return False


# `self.ema.update_parameters(self.model)`: a child's method handed another child (`effects._child_method`).
_HANDS_CHILD = re.compile(r"self(?<!\wself)\.\w+\.\w+\(\s*(?:[^()]*,\s*)?self\.\w+\s*[,)]")


@memoised
def _may_access(index: ModelIndex, method: MethodInfo) -> bool:
    """The text pre-filter, once per method for all the rules that share these accesses."""
    text = method.text
    return (
        index.mentions_param(text) or "parameters(" in text or "_params(" in text or _reads_related(index, method)
        or "self." in text and _INITIALISES_PATH.search(text) is not None
    )


# An initialiser or a helper given an attribute of a child (`nn.init.normal_(self.vit.cls_token)`,
# `init_pos(pos_embedding=self.vit.pos_embed)`): the attribute may be a parameter of a module we cannot read.
_INITIALISES_PATH = re.compile(r"(?:[a-z0-9]_|init\w*)\(\s*(?:\w+=)?self\.\w+(?:\.\w+){1,2}\s*[,)]")


def _hands_argument(index: ModelIndex, text: str) -> bool:
    """Does the method hand one of its own arguments, as is, to a function of this file or one it imports
    (`update_module(module, updates)` in `def forward(self, module, updates)`)? That function may rewrite the
    parameters of a module the caller handed in (`params._forward_argument`)."""
    head = _DEF_ARGUMENTS.search(text)
    if head is None or not head.group(1).strip():
        return False
    names = set()
    for part in head.group(1).split(","):
        name = part.split("=")[0].split(":")[0].strip(" *\n")
        # a module by its name, its annotation or its use (`module.parameters()`): not every tensor handed on
        if name and (module_like_name(name) or "Module" in part or any(f"{name}.{walk}(" in text for walk in _WALKS)):
            names.add(name)
    return bool(names) and any(
        match.group(2) in names and (match.group(1) in index.skeleton.functions or match.group(1) in index.imports)
        for match in _BARE_CALL.finditer(text)
    )


_WALKS = ("parameters", "named_parameters", "modules")
_DEF_ARGUMENTS = re.compile(r"def\s+\w+\s*\(\s*self\s*,([^)]*)\)")
_BARE_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\(\s*(\w+)\s*[,)]")


def _reads_related(index: ModelIndex, method: MethodInfo) -> bool:
    """`self.encoder.pos_embedding` in a class holding a module it cannot read, or a module of another file of
    the package (`self.decoder.mask_token`): a package parameter name?"""
    text = method.text
    aliases = dict(_SELF_ALIAS.findall(text))  # `transformer = self.transformer`
    aliases.update(_SELF_LOOP.findall(text))
    # (root, member or "", attr): `self.a.b` or `alias.b`; without an alias only the reads through `self` count
    reads = _CHILD_ATTR.findall(text) if aliases else _self_reads(text)
    if not reads:
        return False
    candidates = [(aliases.get(root, member) if root != "self" else member, attr) for root, member, attr in reads
                  if (root == "self" or root in aliases) and not attr.startswith("_")]
    # `layer.coef.abs()`: the attribute right after an alias is the parameter
    candidates += [(aliases[root], member) for root, member, _attr in reads if member and root in aliases]
    if not candidates:
        return False
    related = index.related_param_names  # read once per file, only now
    candidates = [(m, a) for m, a in candidates if a in related]
    if not candidates:
        return False
    owner = getattr(method, "owner", None)
    members = facts_of(owner).members if isinstance(owner, ClassInfo) else {}
    return any(
        (member := members.get(m)) is not None and not NOT_A_SUBMODULE.search(m) and (
            member.kind == Kind.UNKNOWN
            or member.kind in (Kind.MODULE, Kind.CONTAINER)
            and any(not c.startswith("torch.") and "." in c for c in member.classes)
        )
        for m, _a in candidates
    )


# `self.a.b`, `self.layers[i].coef` (an item of a container member), `alias.b`
_CHILD_ATTR = re.compile(r"(?<![\w.])(self|\w+)\.(?:(\w+)(?:\[[^\]\n]*\])?\.)?(\w+)")
_SELF_ATTR = re.compile(r"self\.(?:(\w++)(?:\[[^\]\n]*+\])?\.)?(\w+)")


def _self_reads(text: str) -> list[tuple[str, str, str]]:
    """`_CHILD_ATTR.findall(text)`'s matches rooted at `self` (no match starts inside another), found from the
    literal `self.`, which the regex engine finds ten times faster than a pattern opening on a lookbehind."""
    found = []
    for m in _SELF_ATTR.finditer(text):
        at = m.start()
        before = text[at - 1] if at else " "
        if not (before.isalnum() or before in "_."):  # `(?<![\w.])`
            found.append(("self", m.group(1) or "", m.group(2)))
    return found


# `transformer = self.transformer`; `for layer in self.layers` (an item of the member)
_SELF_ALIAS = re.compile(r"^\s*(\w++)\s*=\s*self\.(\w+)\s*$", re.M)
_SELF_LOOP = re.compile(r"for\s+(\w+)\s+in\s+self\.(\w+)\b(?!\s*[.(\[])")


def _built_before(access: ParamAccess, rank: int, helpers: dict[int, int]) -> bool:
    """Was the child `access` reaches built before the access runs (in the init method of rank `rank`)? A child
    a helper builds (`self.create_encoder(args)`) is built at the call of `__init__` that runs that helper
    (`helpers`: rank -> position of that call, for accesses of `__init__` itself)."""
    first = access.first
    if first is None or first.kind == Kind.UNKNOWN:
        return True  # passed in, or reached through .parameters(): built earlier
    if first.order[0] > 0 and rank == 0 and first.order[0] in helpers:
        return helpers[first.order[0]] < access.order
    return first.order < (rank, access.order)


@memoised
def _helper_call_positions(index: ModelIndex, cls: ClassInfo) -> dict[int, int]:
    """For each helper of `cls.init_methods` (by rank), the position in `__init__` of its first `self.m(...)` call
    that runs it, directly or through other helpers (`self.create_encoder(args)` builds `self.encoder` there)."""
    methods = cls.init_methods
    init = methods[0] if methods and methods[0].name == "__init__" else None
    if init is None or len(methods) < 2 or init.node is None:
        return {}
    ranks = {id(m): i for i, m in enumerate(methods)}
    positions: dict[int, int] = {}
    order = init.order
    for node in walk(init.node.body):
        if type(node) is not cst.Call or not isinstance(node.func, cst.Attribute):
            continue
        if not (isinstance(node.func.value, cst.Name) and node.func.value.value == "self"):
            continue
        for reached in cls.reachable(node.func.attr.value, properties=True):
            rank = ranks.get(id(reached))
            if rank and rank not in positions:
                positions[rank] = order.get(id(node), 0)
    return positions
