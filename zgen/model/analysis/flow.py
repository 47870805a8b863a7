"""What runs under which condition inside one function.

`flatten` lists every node of a function with its context: the tests of the
`if`/`while`/conditional expressions around it, the loops around it, and
whether a ZeRO-3 guard (`GatheredParameters`, `synced_gpus`,
`is_deepspeed_zero3_enabled()`) covers it. `Taint` says which local values
differ between ranks (the rank itself, random draws, data-dependent
selections), and `ModuleCalls` which calls run a submodule that owns
parameters. The ZG1xx-ZG3xx rules are written on top of these three.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial

import libcst as cst

from ..program import known
from ..program.index import UNKNOWN_CLASS as UNKNOWN
from ..program.index import ClassInfo, Kind, MethodInfo, ModelIndex
from ..program.tree import access_path, call_name, children, const_str, deep_recursion, dotted, walk

__all__ = [
    "Ctx",
    "Flat",
    "flatten",
    "flat_of",
    "code_of",
    "mentions_guard",
    "RANK",
    "RANDOM",
    "HOST_RANDOM",
    "DATA",
    "Taint",
    "ModuleCalls",
    "bound_names",
]

RANK = "rank"
RANDOM = "random"
HOST_RANDOM = "host-random"
DATA = "data"

_EMPTY_MODULE = cst.Module(body=[])


def code_of(node: cst.CSTNode, limit: int = 60) -> str:
    """Source text of a node on one line, shortened for a message."""
    try:
        with deep_recursion():
            text = " ".join(_EMPTY_MODULE.code_for_node(node).split())
    except RecursionError:
        return "<expression>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True, slots=True)
class Ctx:
    """Where a node sits: enclosing tests (innermost last), enclosing loops, guarded or not."""

    conds: tuple[cst.BaseExpression, ...] = ()
    loops: tuple[cst.CSTNode, ...] = ()
    guarded: bool = False
    # For each test in `conds`, how many loops enclosed it (tells a test inside a loop from one outside).
    depths: tuple[int, ...] = ()

    def cond(self, test: cst.BaseExpression) -> Ctx:
        guarded = self.guarded or mentions_guard(test)
        return Ctx(self.conds + (test,), self.loops, guarded, self.depths + (len(self.loops),))

    def loop(self, node: cst.CSTNode) -> Ctx:
        return Ctx(self.conds, self.loops + (node,), self.guarded, self.depths)

    def guard(self) -> Ctx:
        return Ctx(self.conds, self.loops, True, self.depths)


@dataclass(slots=True)
class Flat:
    """A function's nodes in source order with their context, and each node's parent."""

    nodes: list[tuple[cst.CSTNode, Ctx]] = field(default_factory=list)
    parent: dict[int, cst.CSTNode] = field(default_factory=dict)
    position: dict[int, int] = field(default_factory=dict)


def mentions_guard(test: cst.CSTNode) -> bool:
    """Does a condition mention `synced_gpus`, `is_deepspeed_zero3_enabled()` or a similar guard?"""
    for node in walk(test):
        if isinstance(node, cst.Name) and node.value in known.GUARD_NAMES:
            return True
        if isinstance(node, cst.Attribute) and node.attr.value in known.GUARD_NAMES:
            return True
    return False


_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)


def flatten(func: cst.CSTNode) -> Flat:
    """Every node under `func` in source order, with its `Ctx` (iterative: no recursion limit)."""
    flat = Flat()
    nodes, parents, positions = flat.nodes, flat.parent, flat.position
    stack: list[tuple[cst.CSTNode, Ctx, cst.CSTNode | None]] = [(func, Ctx(), None)]
    # Children of each comprehension's `for` clauses, with the contexts the comprehension computed.
    pending: dict[int, list[tuple[cst.CSTNode, Ctx]]] = {}
    gathering: set[str] = set()  # `cm = deepspeed.zero.GatheredParameters(p) if zero3 else nullcontext()`
    while stack:
        node, ctx, parent = stack.pop()
        positions[id(node)] = len(nodes)
        nodes.append((node, ctx))
        if parent is not None:
            parents[id(node)] = parent
        kind = type(node)
        if kind is cst.CompFor:
            pushes = pending.pop(id(node), [])
            for child, child_ctx in reversed(pushes):
                stack.append((child, child_ctx, node))
            continue
        if kind in _COMPREHENSIONS:
            pushes = _comprehension(node, ctx, pending)
            for child, child_ctx in reversed(pushes):
                stack.append((child, child_ctx, node))
            continue
        if kind is cst.Assign and _gathers(node.value):
            gathering.update(t.target.value for t in node.targets if isinstance(t.target, cst.Name))
        special = _SPECIAL.get(kind)
        if kind is cst.With and gathering:
            special = partial(_with, gathering=gathering)
        if special is None:
            kids = list(children(node))
            for child in reversed(kids):
                stack.append((child, ctx, node))
            continue
        pushes = special(node, ctx)
        for child, child_ctx in reversed(pushes):
            stack.append((child, child_ctx, node))
    return flat


def _if(node: cst.If, ctx: Ctx) -> list[tuple[cst.CSTNode, Ctx]]:
    inner = ctx.cond(node.test)
    pushes = [(node.test, ctx), (node.body, inner)]
    if node.orelse is not None:
        pushes.append((node.orelse, inner))
    return pushes


def _while(node: cst.While, ctx: Ctx) -> list[tuple[cst.CSTNode, Ctx]]:
    inner = ctx.cond(node.test).loop(node)
    pushes = [(node.test, ctx), (node.body, inner)]
    if node.orelse is not None:
        pushes.append((node.orelse, ctx))
    return pushes


def _for(node: cst.For, ctx: Ctx) -> list[tuple[cst.CSTNode, Ctx]]:
    inner = ctx.loop(node)
    pushes = [(node.target, inner), (node.iter, ctx), (node.body, inner)]
    if node.orelse is not None:
        pushes.append((node.orelse, ctx))
    return pushes


def _with(node: cst.With, ctx: Ctx, gathering: set[str] | frozenset[str] = frozenset()) -> list[tuple[cst.CSTNode, Ctx]]:
    gathered = any(
        known.is_gather_context(call_name(item.item))
        or (isinstance(item.item, cst.Name) and item.item.value in gathering)
        for item in node.items
    )
    inner = ctx.guard() if gathered else ctx
    return [(item, ctx) for item in node.items] + [(node.body, inner)]


def _gathers(value: cst.BaseExpression) -> bool:
    """A gather context, possibly chosen by a test (`GatheredParameters(p) if zero3 else nullcontext()`)."""
    if isinstance(value, cst.IfExp):
        return _gathers(value.body) or _gathers(value.orelse)
    return isinstance(value, cst.Call) and known.is_gather_context(call_name(value))


def _ifexp(node: cst.IfExp, ctx: Ctx) -> list[tuple[cst.CSTNode, Ctx]]:
    inner = ctx.cond(node.test)
    return [(node.body, inner), (node.test, ctx), (node.orelse, inner)]


def _boolop(node: cst.BooleanOperation, ctx: Ctx) -> list[tuple[cst.CSTNode, Ctx]]:
    # `a and self.block(x)`: the right side runs only depending on the left.
    return [(node.left, ctx), (node.right, ctx.cond(node.left))]


def _comprehension(node, ctx: Ctx, pending: dict) -> list[tuple[cst.CSTNode, Ctx]]:
    """Push each `for` clause (its iterable evaluated outside, later ones inside) and the element."""
    inner = ctx.loop(node)
    comp = node.for_in
    pushes: list[tuple[cst.CSTNode, Ctx]] = []
    first = True
    while comp is not None:
        clause = [(comp.target, inner), (comp.iter, ctx if first else inner)]
        for test in comp.ifs:
            clause.append((test.test, inner))
            inner = inner.cond(test.test)
        pending[id(comp)] = clause
        pushes.append((comp, inner))
        first = False
        comp = comp.inner_for_in
    if type(node) is cst.DictComp:
        pushes += [(node.key, inner), (node.value, inner)]
    else:
        pushes.append((node.elt, inner))
    return pushes


_SPECIAL = {
    cst.If: _if,
    cst.While: _while,
    cst.For: _for,
    cst.With: _with,
    cst.IfExp: _ifexp,
    cst.BooleanOperation: _boolop,
}


def flat_of(method: MethodInfo) -> Flat | None:
    """The flattened method, computed once per method."""
    cache = method.__dict__
    if "_flat" not in cache:
        node = method.node
        cache["_flat"] = flatten(node) if node is not None else None
    return cache["_flat"]


def bound_names(target: cst.CSTNode) -> Iterator[str]:
    """Names bound by an assignment or loop target (`a`, `a, (b, c)`, `*rest`)."""
    if isinstance(target, cst.Name):
        yield target.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from bound_names(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from bound_names(target.value)


# Methods that put their arguments into the container they are called on.
FILLS = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "put", "appendleft"})


def _filled(node: cst.CSTNode, local: set[str]) -> tuple[list[cst.CSTNode], cst.CSTNode | None]:
    """`xs.append(v)` as the binding ([xs], v) when `xs` is a local of this function; else ([], None)."""
    if type(node) is cst.Call:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in FILLS and isinstance(func.value, cst.Name):
            if node.args and func.value.value in local:
                return [func.value], node.args[-1].value
    return [], None



def targets_of(node: cst.CSTNode) -> tuple[list[cst.CSTNode], cst.CSTNode | None]:
    """(targets, value) of an assignment-like node, or ([], None)."""
    kind = type(node)
    if kind is cst.Assign:
        return [t.target for t in node.targets], node.value
    if kind is cst.AnnAssign or kind is cst.AugAssign:
        return ([node.target], node.value) if node.value is not None else ([], None)
    if kind is cst.For or kind is cst.CompFor:
        return [node.target], node.iter
    if kind is cst.NamedExpr:
        return [node.target], node.value
    return [], None


class Taint:
    """Which values in a function can differ between ranks, and why.

    A value is tainted by the rank (`dist.get_rank()`, `LOCAL_RANK`,
    `is_main_process`), by a random draw (torch's generator or the host's
    `random`/`numpy.random`), or by a data-dependent selection (`nonzero()`,
    `unique()`, one-argument `torch.where`, `.any()`/`.all()`). Indexing with
    the rank (`shards[rank]`) is arithmetic, not a decision. Taint flows
    through assignments and through branches: a name assigned under a
    tainted condition is tainted too (`to_drop = True` inside
    `if torch.rand([]) < p:`), from that assignment on (or around a loop
    that encloses both). `direct` keeps only what flowed through values,
    which is what decides how often a loop runs.

    A `x is None` test does not carry data taint: whether an optional input
    was given is the caller's convention (`labels is not None`), not data.
    """

    def __init__(self, index: ModelIndex, cls: ClassInfo | None, flat: Flat) -> None:
        self.index = index
        self.cls = cls
        self.names: dict[str, dict[str, str]] = {}
        self.direct: dict[str, dict[str, str]] = {}
        self.rank_attrs = cls.rank_attrs if cls is not None else frozenset()
        self._memo: dict[tuple[int, bool], dict[str, str]] = {}
        self._flat = flat
        # Where each tainted name was assigned (position, enclosing loops): a use before that
        # assignment sees the taint only when a loop around both carries it back.
        self._where: dict[str, list[tuple[int, tuple[cst.CSTNode, ...]]]] = {}
        self._done = False  # names still change while propagating: no memo until then
        local = {  # names this function binds itself (not `self`, not an imported module)
            name for node, _ctx in flat.nodes for target in targets_of(node)[0] for name in bound_names(target)
        } - {"self", "cls"}
        for _ in range(2):  # a second pass carries taint around loops
            for node, ctx in flat.nodes:
                if type(node) is cst.CompFor:
                    continue  # a comprehension's variable lives in the comprehension only
                targets, value = targets_of(node)
                if value is None:
                    targets, value = _filled(node, local)  # `offsets.append(n)`: the list holds what was put in
                if value is None:
                    continue
                direct = self.of(value, direct=True)
                kinds = dict(self.of(value))
                for test in ctx.conds:
                    for kind, why in self.of(test).items():
                        kinds.setdefault(kind, why)
                if not kinds:
                    continue
                site = (flat.position.get(id(node), -1), ctx.loops)
                for target in targets:
                    for name in bound_names(target):
                        _merge_into(self.names.setdefault(name, {}), kinds)
                        if direct:
                            _merge_into(self.direct.setdefault(name, {}), direct)
                        sites = self._where.setdefault(name, [])
                        if site not in sites:
                            sites.append(site)
        self._done = True

    def _reaches(self, use: cst.Name) -> bool:
        """Can a tainted assignment of this name reach `use` (earlier in the code, or around a loop)?"""
        position = self._flat.position.get(id(use))
        sites = self._where.get(use.value)
        if position is None or not sites:
            return True
        loops = self._flat.nodes[position][1].loops
        guard = self._enclosing_while_test(use)
        if guard is not None:  # `while go:` with `go = ...` in the body: the loop carries it back
            loops = (*loops, guard)
        for at, around in sites:
            if at < position or any(loop is other for loop in around for other in loops):
                return True
        return False

    def _enclosing_while_test(self, use: cst.CSTNode) -> cst.While | None:
        """The `while` whose test holds `use` (a test is flattened outside its own loop)."""
        child, parent = use, self._flat.parent.get(id(use))
        for _ in range(12):
            if parent is None:
                return None
            if isinstance(parent, cst.While):
                return parent if parent.test is child else None
            if isinstance(parent, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                return None
            child, parent = parent, self._flat.parent.get(id(parent))
        return None

    def of(self, expr: cst.CSTNode, direct: bool = False) -> dict[str, str]:
        """The taint kinds of an expression, each with the source it came from (for messages)."""
        key = (id(expr), direct)
        if self._done and key in self._memo:
            return self._memo[key]
        found = self._of(expr, self.direct if direct else self.names)
        if self._done:
            self._memo[key] = found
        return found

    def _of(self, expr: cst.CSTNode, names: dict[str, dict[str, str]]) -> dict[str, str]:
        found: dict[str, str] = {}
        stack = [expr]
        while stack:
            node = stack.pop()
            kind = type(node)
            if kind is cst.Call:
                taint = self._call_kind(node)
                if taint is not None:
                    found.setdefault(taint, _call_text(node))
            elif kind is cst.Name:
                if node.value in names and self._reaches(node):
                    _merge_into(found, names[node.value])
                elif node.value in known.RANK_NAMES:
                    found.setdefault(RANK, node.value)
            elif kind is cst.Attribute and node.attr.value in VALUE_FREE_ATTRS:
                # `x.ndim` of a value that went through a random helper (`drop_path`): the shape is not random
                inner = self._of(node.value, names)
                inner.pop(RANDOM, None)
                inner.pop(HOST_RANDOM, None)
                _merge_into(found, inner)
                continue
            elif kind is cst.Attribute:
                if node.attr.value in known.RANK_NAMES:
                    found.setdefault(RANK, code_of(node))
                elif node.attr.value in self.rank_attrs and isinstance(node.value, cst.Name):
                    if node.value.value == "self":
                        found.setdefault(RANK, code_of(node))
            elif kind is cst.Subscript:
                base = dotted(node.value) or ""
                if base.endswith("environ") and _env_key(node) in known.RANK_ENV:
                    found.setdefault(RANK, code_of(node))
                    continue
                # `parts[rank]` picks this rank's share: the rank is arithmetic here, not a decision.
                for element in node.slice:
                    inner = self._of(element, names)
                    inner.pop(RANK, None)
                    _merge_into(found, inner)
                stack.append(node.value)
                continue
            elif kind in _COMPREHENSIONS:
                # Names bound by the comprehension's `for` shadow the function's names of the same spelling.
                comp, local = node.for_in, set()
                while comp is not None:
                    local.update(bound_names(comp.target))
                    comp = comp.inner_for_in
                if local & names.keys():
                    _merge_into(found, self._of_comprehension(node, {k: v for k, v in names.items() if k not in local}))
                    continue
            elif kind is cst.Comparison and is_none_test(node):
                inner = self._of(node.left, names)
                inner.pop(DATA, None)
                _merge_into(found, inner)
                continue
            elif kind is cst.Comparison:
                reduction = _compared_reduction(node)
                if reduction is not None:  # `x.sum() > 0`: a decision on this rank's tensor values
                    found.setdefault(DATA, reduction)
            stack.extend(children(node))
        return found

    def _of_comprehension(self, node: cst.CSTNode, names: dict[str, dict[str, str]]) -> dict[str, str]:
        found: dict[str, str] = {}
        for child in children(node):
            _merge_into(found, self._of(child, names))
        return found

    def _call_kind(self, node: cst.Call) -> str | None:
        name = call_name(node)
        if name is None:
            return None
        qualified = name if name.startswith(".") else self.index.qualify(name)
        last = qualified.rsplit(".", 1)[-1]
        if last in known.RANK_CALLS:
            return RANK
        if qualified.endswith(("environ.get", "getenv")) and node.args:
            if const_str(node.args[0].value) in known.RANK_ENV:
                return RANK
        if qualified in known.RANDOM_TORCH:
            return RANDOM
        if qualified.startswith(known.RANDOM_HOST_PREFIXES):
            return HOST_RANDOM
        method = isinstance(node.func, cst.Attribute)
        if method and last in known.RANDOM_TORCH_METHODS and not qualified.startswith("torch.nn.init"):
            return RANDOM
        if qualified in known.DATA_SELECT_FUNCS:
            return DATA
        if name in ("all", "any") and len(node.args) == 1 and isinstance(node.args[0].value, cst.Call):
            return DATA  # all(stopping_criteria(out)): a verdict over this rank's values
        if qualified == "torch.where" and len(node.args) == 1:
            return DATA
        if isinstance(node.func, cst.Name):
            return random_function(self.index, node.func.value)
        if method and last in known.DATA_SELECT_METHODS and not qualified.startswith(("torch.", "numpy.")):
            return DATA
        return None


# A random draw in a function's text (torch's generator, or the host's `random` / `numpy.random`).
_TORCH_DRAW = re.compile(
    r"\btorch\.(?:rand|randn|randint|randperm|bernoulli|multinomial)\b|\.(?:uniform_|bernoulli_)\("
)
_HOST_DRAW = re.compile(r"\b(?:random|np\.random|numpy\.random)\.\w+\(|\brandrange\(|\brandom\(\)")


def random_function(index: ModelIndex, name: str) -> str | None:
    """RANDOM / HOST_RANDOM when `name` is a function of this file that draws a random number and returns.

    `layers = dropout_layers(self.layers, p)`: what such a helper returns
    differs per rank as much as the draw inside it.
    """
    key = ("random-function", name)
    if key in index.cache:
        return index.cache[key]  # type: ignore[return-value]
    span = index.skeleton.functions.get(name)
    kind = None
    if span is not None:
        text = index.skeleton.text(span.start, span.end)
        if "return" in text:
            kind = RANDOM if _TORCH_DRAW.search(text) else HOST_RANDOM if _HOST_DRAW.search(text) else None
    index.cache[key] = kind
    return kind


# What a tensor is rather than what it holds: the same whatever values a random draw or a rank's data put in.
VALUE_FREE_ATTRS = frozenset({"shape", "ndim", "dtype", "device", "is_cuda", "requires_grad", "layout"})


# Reductions of a tensor to a value that a comparison then tests.
_VALUE_REDUCTIONS = frozenset({"sum", "mean", "max", "min", "amax", "amin", "norm", "count_nonzero", "std"})


def _compared_reduction(node: cst.Comparison) -> str | None:
    """`x.sum() > 0`, `h.norm().item() < eps`: the reduction of a local tensor a comparison tests, as text."""
    for side in (node.left, *(t.comparator for t in node.comparisons)):
        call = side
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "item":
            call = call.func.value
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)):
            continue
        if call.func.attr.value not in _VALUE_REDUCTIONS:
            continue
        root = call.func.value
        while isinstance(root, (cst.Attribute, cst.Subscript, cst.Call)):
            root = root.func if isinstance(root, cst.Call) else root.value
        if isinstance(root, cst.Name) and root.value not in ("self", "torch", "np", "numpy", "math"):
            return f".{call.func.attr.value}()"
    return None


def _merge_into(into: dict[str, str], extra: dict[str, str]) -> None:
    for kind, why in extra.items():
        into.setdefault(kind, why)


def is_none_test(node: cst.Comparison) -> bool:
    """`x is None` / `x is not None` (every comparison of the chain against `None`)."""
    return all(
        isinstance(t.operator, (cst.Is, cst.IsNot))
        and isinstance(t.comparator, cst.Name)
        and t.comparator.value == "None"
        for t in node.comparisons
    )


def _call_text(node: cst.Call) -> str:
    """`torch.rand()` for a function, `.nonzero()` for a method of a computed value."""
    name = dotted(node.func)
    if name is None and isinstance(node.func, cst.Attribute):
        return f".{node.func.attr.value}()"
    return f"{name or code_of(node.func)}()"


def _env_key(node: cst.Subscript) -> str | None:
    if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        return const_str(node.slice[0].slice.value)
    return None


class ModuleCalls:
    """Finds the calls in a method of `cls` that run a submodule owning parameters.

    A call counts when its callee resolves to a child module whose class has
    (or may have) parameters: `self.block(x)`, `self.layers[i](x)`, a local
    bound to one (`for layer in self.layers`, `expert = self.experts[i]`),
    `self[...]` in a ModuleList/ModuleDict subclass, `getattr(self, name)`,
    or the module itself (`self(...)`, `self.forward(...)`). Activation and
    dropout modules do not count: they gather nothing.
    """

    def __init__(self, index: ModelIndex, cls: ClassInfo, flat: Flat, method_name: str) -> None:
        self.index = index
        self.cls = cls
        self.method_name = method_name
        self.aliases: dict[str, tuple[str, ...]] = {}
        self.sequences: set[str] = set()  # locals holding a list of submodules (`layers = [l for l in self.layers]`)
        self.filtered: set[str] = set()  # ... chosen by a condition: its length is not fixed by the model
        for node, _ctx in flat.nodes:
            targets, value = targets_of(node)
            if value is None:
                continue
            loop = isinstance(node, (cst.For, cst.CompFor))
            if loop and isinstance(value, cst.Call) and call_name(value) == "zip":
                # for layer, keep in zip(self.layers, keeps): each target takes its own argument's items
                for target in targets:
                    if isinstance(target, cst.Tuple):
                        for element, arg in zip(target.elements, value.args):
                            classes = self._elements_of(arg.value)
                            if classes is not None:
                                for name in bound_names(element.value):
                                    self.aliases[name] = classes
                continue
            classes = self._loop_classes(value) if loop else self.classes_of(value)
            if classes is None and not loop and self._returned_sequence(value) is not None:
                # `layers = dropout_layers(self.layers, p)`: some of the same submodules, how many not fixed
                for target in targets:
                    for name in bound_names(target):
                        self.aliases[name] = self._returned_sequence(value)  # type: ignore[assignment]
                        self.sequences.add(name)
                        self.filtered.add(name)
                continue
            if classes is None and not loop and self._filtered_sequence(value) is not None:
                filtered = bool(value.for_in.ifs)  # type: ignore[attr-defined]
                for target in targets:
                    for name in bound_names(target):
                        self.aliases[name] = self._filtered_sequence(value)  # type: ignore[assignment]
                        self.sequences.add(name)
                        if filtered:
                            self.filtered.add(name)
                continue
            if classes is None:
                continue
            for target in targets:
                if loop and isinstance(target, cst.Tuple) and len(target.elements) == 2:
                    # for i, layer in enumerate(self.layers)
                    target = target.elements[1].value
                for name in bound_names(target):
                    self.aliases[name] = classes

    def _returned_sequence(self, value: cst.BaseExpression) -> tuple[str, ...] | None:
        """A function of this file handed a list of submodules: what it returns may be some of them."""
        if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Name)):
            return None
        if value.func.value not in self.index.skeleton.functions or not value.args:
            return None
        return self._elements_of(value.args[0].value)

    def _filtered_sequence(self, value: cst.BaseExpression) -> tuple[str, ...] | None:
        """`[l for l in self.layers if ...]`: a local list of (some of) the same submodules."""
        if isinstance(value, cst.ListComp) and isinstance(value.elt, cst.Name):
            comp = value.for_in
            if comp.inner_for_in is None and isinstance(comp.target, cst.Name) and comp.target.value == value.elt.value:
                return self._loop_classes(comp.iter)
        return None

    def _loop_classes(self, iterable: cst.BaseExpression) -> tuple[str, ...] | None:
        if isinstance(iterable, cst.Call) and (call_name(iterable) or "") in {"enumerate", "reversed", "zip", "list"}:
            if iterable.args:
                iterable = iterable.args[0].value
        return self._elements_of(iterable)

    def _elements_of(self, expr: cst.BaseExpression) -> tuple[str, ...] | None:
        """Classes of the modules that iterating over `expr` yields, if it is a module container."""
        if isinstance(expr, cst.Subscript):  # self.layers[:n]
            return self._elements_of(expr.value)
        path = access_path(expr)
        if path is None:
            return None
        if path.root == "self" and not path.parts and self.cls.container_kind:
            return self.cls.facts.elements or (UNKNOWN,)
        if path.root in self.aliases and not path.parts:
            return self.aliases[path.root]
        resolved = self._resolve(path.root, path.parts)
        if resolved is None:
            return None
        kind, classes = resolved
        return classes if kind == Kind.CONTAINER else None

    def classes_of(self, expr: cst.BaseExpression) -> tuple[str, ...] | None:
        """Classes of the module an expression evaluates to, or None if it is not a submodule."""
        if isinstance(expr, cst.Call) and call_name(expr) == "getattr" and expr.args:
            first = expr.args[0].value
            if isinstance(first, cst.Name) and first.value == "self":
                return (UNKNOWN,)
            return None
        path = access_path(expr)
        if path is None:
            return None
        if path.root == "self" and path.parts[:1] == ("[]",) and self.cls.container_kind:
            rest = path.parts[1:]
            return (self.cls.facts.elements or (UNKNOWN,)) if not rest else None
        if path.root in self.aliases:
            if not path.parts:
                return None if path.root in self.sequences else self.aliases[path.root]
            if path.parts == ("[]",):
                return (UNKNOWN,)
            return None
        resolved = self._resolve(path.root, path.parts)
        if resolved is None:
            return None
        kind, classes = resolved
        return classes if kind in (Kind.MODULE, Kind.UNKNOWN, Kind.CONTAINER) else None

    def resolve(self, parts: tuple[str, ...]) -> tuple[Kind, tuple[str, ...]] | None:
        """What `self.<parts>` holds (kind and classes), following members of this class and its children."""
        return self._resolve("self", parts)

    def _resolve(self, root: str, parts: tuple[str, ...]) -> tuple[Kind, tuple[str, ...]] | None:
        """Follow `self.a[0].b` through the members of this class and its children."""
        if root != "self" or not parts or parts[0] == "[]":
            return None
        member = self.cls.facts.members.get(parts[0])
        if member is None:
            return None
        kind, classes = member.kind, member.classes
        for part in parts[1:]:
            if kind == Kind.CONTAINER:
                kind = Kind.MODULE
                if part == "[]":
                    continue
                # ModuleDict attribute access (`self.experts.expert_0`) or a method of the list.
                return None
            if kind == Kind.UNKNOWN:
                return (Kind.UNKNOWN, (UNKNOWN,)) if part == "[]" else None
            if kind != Kind.MODULE or part == "[]":
                return None
            nxt = None
            for ref in classes:
                nxt = self.index.member_of(ref, part)
                if nxt is not None:
                    break
            if nxt is None:
                return None
            kind, classes = nxt.kind, nxt.classes
        return kind, classes

    def is_module_sequence(self, expr: cst.BaseExpression) -> bool:
        """Is `expr` a container of submodules (`self.layers`, `self.layers[:n]`), all of them run?"""
        if isinstance(expr, cst.Name) and expr.value in self.filtered:
            return False
        return self._elements_of(expr) is not None

    def callee(self, call: cst.Call) -> str | None:
        """A description of the submodule this call runs (`self.layers[i]`), or None."""
        func = call.func
        if isinstance(func, cst.Name) and func.value == "self":
            return "self" if self.method_name != "forward" else None
        if isinstance(func, cst.Attribute) and func.attr.value in {"forward", "__call__"}:
            target = func.value
            if isinstance(target, cst.Name) and target.value == "self":
                return "self.forward" if self.method_name != "forward" else None
            if isinstance(target, cst.Call) and call_name(target) == "super":
                return None  # the parent class's forward on the same module: no other module runs
            func = target
        classes = self.classes_of(func)
        if classes is None:
            return None
        if not any(self.index.gathers(ref) for ref in classes):
            return None
        return code_of(func)
