"""Parameter accesses by scope: where in a module class's life each method runs, and what is partitioned there.

`scoped_accesses(index, scope)` filters `params.accesses` for the methods
of one scope (`forward`, `init`, `entry`, `late`): guarded sites, modules
built in the method itself, parameters ZeRO-3 keeps gathered, and in
`__init__` submodules not built yet are left out.
"""

from __future__ import annotations

import re

from ..program.index import ClassInfo, MethodInfo, ModelIndex, memoised
from ..program.members import Kind, facts_of
from ..program.tree import cst
from .access import INIT, WRITE, Access
from .flow import flat_of
from .params import NOT_A_SUBMODULE, accesses
from .persistence import is_persistent

__all__ = ["scoped_accesses"]


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
            if scope != "init" and access.use not in (WRITE, INIT) and is_persistent(index, access):
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
    return any(f"self.{name}" in text for name in _helper_names(index, cls))


@memoised
def _helper_names(index: ModelIndex, cls: ClassInfo) -> frozenset[str]:
    """Stored lambdas, properties, helpers returning `self.<...>` and base-class methods of `cls` that mention a parameter."""
    found = set(facts_of(cls).lambdas) if "lambda" in cls.text else set()
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
    return frozenset(found)


def _mentions_own_param(index: ModelIndex, cls: ClassInfo, text: str) -> bool:
    """Does `text` name `self.<p>` for a parameter `p` the class registers itself (partitioned in an entry method)?"""
    # From the text first: most classes register none, and their `__init__` stays unparsed.
    if not any(f"self.{name}" in text for name in _own_param_names(index, cls)):
        return False
    return any(
        member.kind == Kind.PARAM and not member.classes and f"self.{name}" in text
        for name, member in facts_of(cls).members.items()
    )


@memoised
def _own_param_names(index: ModelIndex, cls: ClassInfo) -> frozenset[str]:
    written = {m.group(1) or m.group(2) for info in cls.mro for m in _OWN_PARAM_DEF.finditer(info.text)}
    return frozenset(n for n in written if n)


_OWN_PARAM_DEF = re.compile(
    r"self\.(\w+)\s*(?::[^=\n]*)?=\s*(?:[\w.]*\.)?Parameter(?:List|Dict)?\(|register_parameter\(\s*[\"'](\w+)"
)


def _hands_module(text: str) -> bool:
    return bool(_HANDS_SELF.search(text) or ("for " in text and _HANDS_ALIAS.search(text)))


@memoised
def _may_access(index: ModelIndex, method: MethodInfo) -> bool:
    """The text pre-filter, once per method for all the rules that share these accesses."""
    text = method.text
    return index.mentions_param(text) or "parameters(" in text or _reads_related(index, method)


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
    members = facts_of(owner).members if isinstance(owner, ClassInfo) else {}
    return any(
        (member := members.get(m)) is not None and member.kind == Kind.UNKNOWN and not NOT_A_SUBMODULE.search(m)
        for m, _a in candidates
    )


_CHILD_ATTR = re.compile(r"(?<![\w.])(self|\w+)\.(?:(\w+)\.)?(\w+)")
_SELF_ALIAS = re.compile(r"^\s*(\w+)\s*=\s*self\.(\w+)\s*$", re.M)


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
