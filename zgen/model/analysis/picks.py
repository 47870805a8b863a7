"""Submodules picked out of a module container by a value that differs between ranks.

`self.experts[rank_slice]`, `self.heads[str(best.item())]`, `getattr(self, f"head_{k}")`: the key names *which*
modules run. When the key differs per rank (the rank itself, a random draw, an index this rank's tensor values
choose: `argmax`, `topk`), ranks run different modules and their parameter
all-gathers do not line up. The pick is followed however the code reaches the call: called at once, bound to a
local or an attribute and called later, iterated (a slice), or zipped with the inputs.

Unlike a data share (`shards[rank]`), indexing a *module* container by the rank is a decision, not arithmetic,
so the rank is kept here where `Taint` drops it inside a subscript.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ..program import known
from ..program.holds import unmoved
from ..program.index import ClassInfo
from ..program.members import facts_of
from ..program.tree import call_name, code_of, cst, dotted, parameter_for, walk
from .callables import called_parameters
from .calls import items_are_modules
from .flow import Flat, bound_names, loop_items, same_items, targets_of
from .taint import DATA, HOST_RANDOM, RANK, VALUE_FREE_ATTRS, Taint

__all__ = ["Pick", "picked_runs", "may_pick"]

# Reductions that return positions chosen by a tensor's values: a key computed from them names a module by data.
# (So does a tensor's one value read out, `int(z.item())`: the position the caller's tensor holds.)
_INDEX_REDUCTIONS = frozenset({"argmax", "argmin", "argsort", "topk", "kthvalue", "mode", "item"})


class _Calls(Protocol):
    def is_module_sequence(self, expr: cst.BaseExpression) -> bool: ...


@dataclass(frozen=True, slots=True)
class Pick:
    """A module run only because a per-rank key picked it."""

    kind: str  # taint kind of the key: RANK / RANDOM / HOST_RANDOM / DATA
    iterated: bool  # a slice walked by a loop (how many and which run), else one picked module
    node: cst.CSTNode  # the picking expression (reported)
    source: str  # what makes the key differ
    callee: str  # the module that runs
    call: cst.Call


def may_pick(flat: Flat) -> bool:
    """Cheap trigger: an item of an attribute (`self.experts[k]`, `model.heads[k]`, not `x.shape[i]`) or
    `getattr(obj, name)` taken by a key that is not a literal, or drawn at random (`random.choice(self.layers)`)."""
    for node, _ctx in flat.nodes:
        kind = type(node)
        if kind is cst.Subscript:
            value = node.value
            if isinstance(value, cst.Attribute) and value.attr.value not in VALUE_FREE_ATTRS or (
                    type(value) is cst.Name and value.value == "self"):  # (`self[k]` of a container class)
                if any(not _literal(element.slice) for element in node.slice):
                    return True
        elif kind is cst.Call and isinstance(node.func, cst.Name) and node.func.value == "getattr":
            if len(node.args) >= 2 and not _literal(node.args[1].value):
                return True
        elif kind is cst.Call and _drawn_from(node) is not None:
            return True
    return False


def picked_runs(
    flat: Flat,
    calls: _Calls,
    taint: Taint,
) -> list[Pick]:
    """Calls that run a module picked out of a module container by a key that differs per rank.
    (A key computed from what a submodule returned is not enough: feature levels, the outputs' count, are the
    model's structure; an index the values choose, `argmax`/`topk`, is.)
    """
    candidates = [(node, ctx) for node, ctx in flat.nodes if _keyed(node)]
    if not candidates:
        return []
    names = (_rank_names(flat, taint), _reduced_names(flat))
    input_items = _input_items(flat, taint)
    picks: dict[int, tuple[cst.CSTNode, bool, str, str]] = {}  # id(pick expr) -> (expr, is slice, kind, source)
    for node, ctx in candidates:
        # the key first: what a container holds is resolved (through the children's classes) only for a per-rank key
        found = _pick(node, taint, *names)
        if found is not None and _walked_key(node, ctx, taint):
            continue  # (`for i in idx.unique(): self.experts[i](x)`: the loop itself is the decision, reported there)
        found = found or _collected(node, ctx, taint) or _input_item_key(node, taint.cls, input_items)
        if found is None or not _container_item(node, calls):
            continue
        picks[id(node)] = (node, *found)
    if not picks:
        return []
    # Names and attributes bound to a pick (`experts = self.experts[s]`, `self.expert = self.experts[k]`), by text.
    bound: dict[str, tuple[int, int]] = {}  # bound text -> (id of the pick, position of the binding)
    items: dict[str, tuple[int, int]] = {}  # loop variables walking a picked slice
    for node, _ctx in flat.nodes:
        targets, value = targets_of(node)
        if value is None:
            continue
        if type(node) in (cst.For, cst.CompFor):
            for part, iterable in loop_items(node.target, node.iter):
                key = _picked(same_items(iterable), picks, bound)
                if key is not None:  # (a slice, also one held in a name: `self.experts[expert_slice]`)
                    for name in bound_names(part):
                        items[name] = (key, flat.position.get(id(node), 0))
            continue
        if type(value) in (cst.ListComp, cst.GeneratorExp):  # `qs = [self.qs[i] for i in draw]`: a list of picks
            value = value.elt
        key = _picked(unmoved(value, _MOVES), picks, bound)
        if key is None:
            continue
        for target in targets:
            names = list(bound_names(target))
            if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name):
                names.append(code_of(target))
            for name in names:
                bound[name] = (key, flat.position.get(id(node), 0))
    out: list[Pick] = []
    seen: set[int] = set()
    for node, ctx in flat.nodes:
        if type(node) is not cst.Call or ctx.guarded:
            continue
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("forward", "__call__"):
            func = func.value
        at = flat.position.get(id(node), 0)
        key = _picked(func, picks, bound, at)
        iterated = False
        if key is None:
            text = func.value if isinstance(func, cst.Name) else None
            if text in items and items[text][1] < at:
                key, iterated = items[text][0], True
        runner = func
        if key is None and (handed := _handed_pick(node, taint.cls, picks, bound, at)) is not None:
            key, runner = handed  # `self.step(s, net=self.nets[i])`: the method runs the module it is handed
        if key is None or key in seen:
            continue
        seen.add(key)
        expr, is_slice, kind, source = picks[key]
        out.append(Pick(kind, iterated or is_slice, expr, source, code_of(runner), node))
    return out


def _handed_pick(
    call: cst.Call, cls: ClassInfo | None, picks: dict, bound: dict, at: int
) -> tuple[int, cst.BaseExpression] | None:
    """(the pick, the argument) when `call` hands a picked module to a method of the class that calls that parameter
    (`self.sample_step(state, mem_net=self.mem_nets[i])` with `def sample_step(self, state, mem_net): mem_net(s)`)."""
    func = call.func
    if cls is None or not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)
                           and func.value.value == "self"):
        return None
    for position, arg in enumerate(call.args):
        if arg.star:
            continue
        key = _picked(unmoved(arg.value, _MOVES), picks, bound, at)
        if key is None:
            continue
        method = cls.inherited_method(func.attr.value)
        node = method.node if method is not None else None
        if node is not None and parameter_for(node, call, position) in called_parameters(node):
            return key, arg.value
    return None


def _walked_key(node: cst.CSTNode, ctx, taint: Taint) -> bool:
    """Is the key of an item a variable of an enclosing loop over a value that already differs per rank?"""
    if type(node) is cst.Subscript:
        parts = [element.slice for element in node.slice]
    elif type(node) is cst.Call and len(node.args) >= 2:  # `getattr(self.experts, f"expert_{idx}")`
        parts = [node.args[1].value]
    else:
        return False
    walked: set[str] = set()
    for loop in ctx.loops:
        target = loop.target if isinstance(loop, cst.For) else getattr(getattr(loop, "for_in", None), "target", None)
        iterable = loop.iter if isinstance(loop, cst.For) else getattr(getattr(loop, "for_in", None), "iter", None)
        if target is not None and iterable is not None and taint.of(iterable):
            walked.update(bound_names(target))
    if not walked:
        return False
    keys = [n.value for part in parts for n in walk(part) if type(n) is cst.Name]
    return bool(keys) and all(key in walked for key in keys)


def _collected(node: cst.CSTNode, ctx, taint: Taint) -> tuple[bool, str, str] | None:
    """(a slice, taint kind, source) when `node` is the element of a comprehension that collects container items by
    keys it walks from a value that differs per rank (`[self.qs[i] for i in np.random.choice(n, 2)]`): a list of
    modules drawn, run where the list is (`_walked_key` leaves it: no call runs in that comprehension)."""
    loop = ctx.loops[-1] if ctx.loops else None
    if type(node) is not cst.Subscript or getattr(loop, "elt", None) is not node:
        return None
    comp = loop.for_in
    if comp.inner_for_in is not None or not isinstance(comp.target, cst.Name):
        return None
    key = comp.target.value
    if not all(isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.Name) and e.slice.value.value == key
               for e in node.slice):
        return None
    kinds = taint.of(comp.iter)
    kind = next((k for k in (RANK, *sorted(kinds)) if k in kinds), None)
    return (True, kind, kinds[kind]) if kind is not None else None


def _input_items(flat: Flat, taint: Taint) -> dict[str, str]:
    """In a module's method, the loop variables that take the distinct items of a collection the call was given
    (`for name in set(adapter_names)`, also through a local: `unique = set(adapter_names)`, and from the `**kwargs`:
    `names = kwargs.pop("adapter_names")`), -> the loop's iterable. A collection deduplicated before it is walked
    holds one entry per sample (the adapter or task each sample asks for): which items a batch brings is this rank's
    own. A list walked as it came (`for key in names`) reads as the caller's settings, and so does a parameter with a
    default other than None (`names=("a", "b")`)."""
    root = flat.nodes[0][0] if flat.nodes else None
    if taint.cls is None or not taint.cls.is_module or type(root) is not cst.FunctionDef or not taint.inputs:
        return {}
    params = root.params
    collections = {  # name -> deduplicated already
        p.name.value: False for p in (*params.posonly_params, *params.params, *params.kwonly_params)
        if p.name.value in taint.inputs and (p.default is None or _is_none(p.default))
    }
    extra = params.star_kwarg.name.value if isinstance(params.star_kwarg, cst.Param) else None
    items: dict[str, str] = {}
    for node, _ctx in flat.nodes:
        if type(node) in (cst.For, cst.CompFor):
            for part, iterable in loop_items(node.target, node.iter):
                walked, deduplicated = _items_of(iterable)
                if isinstance(walked, cst.Name) and walked.value in collections and (
                        deduplicated or collections[walked.value]):
                    for name in bound_names(part):
                        items[name] = code_of(node.iter)
            continue
        targets, value = targets_of(node)
        if type(node) is cst.Assign and len(targets) == 1 and isinstance(targets[0], cst.Name) and value is not None:
            walked, deduplicated = _items_of(value)
            if walked is not value and isinstance(walked, cst.Name) and walked.value in collections:
                collections[targets[0].value] = deduplicated or collections[walked.value]
            elif extra is not None and _keyword_taken(value, extra):
                collections[targets[0].value] = False
    return items


def _items_of(expr: cst.BaseExpression) -> tuple[cst.BaseExpression, bool]:
    """The collection whose items `expr` holds, through `list`/`sorted`/... (`same_items`) and the deduplicating
    `set(xs)`, `dict.fromkeys(xs)`; and whether one of those deduplicated it."""
    deduplicated = False
    while True:
        inner = same_items(expr)
        if isinstance(inner, cst.Call) and dotted(inner.func) in _DEDUPERS and inner.args \
                and inner.args[0].keyword is None and not inner.args[0].star:
            inner, deduplicated = inner.args[0].value, True
        if inner is expr:
            return expr, deduplicated
        expr = inner


_DEDUPERS = frozenset({"set", "frozenset", "dict.fromkeys"})


def _keyword_taken(value: cst.BaseExpression, kwargs: str) -> bool:
    """`kwargs.pop("name", None)`, `kwargs.get("name")`, `kwargs["name"]` of the `**kwargs` a call was given."""
    if isinstance(value, cst.Subscript):
        return isinstance(value.value, cst.Name) and value.value.value == kwargs
    func = value.func if isinstance(value, cst.Call) else None
    return isinstance(func, cst.Attribute) and func.attr.value in ("pop", "get") and isinstance(func.value, cst.Name) \
        and func.value.value == kwargs


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def _input_item_key(node: cst.CSTNode, cls: ClassInfo | None, items: dict[str, str]) -> tuple[bool, str, str] | None:
    """(not a slice, DATA, source) for a ModuleDict member indexed by an item of a collection the call was given
    (`self.lora_A[name]` in `for name in set(adapter_names)`): the batch names the modules that run. (An integer
    position in a ModuleList, `self.heads[i]` for `i in layer_ids`, is how code walks levels it was told.)"""
    if not items or cls is None or type(node) is not cst.Subscript or len(node.slice) != 1:
        return None
    key = node.slice[0].slice
    if not isinstance(key, cst.Index) or not isinstance(key.value, cst.Name) or key.value.value not in items:
        return None
    holder = node.value
    if not (isinstance(holder, cst.Attribute) and isinstance(holder.value, cst.Name) and holder.value.value == "self"):
        return None
    member = facts_of(cls).members.get(holder.attr.value)
    built = call_name(member.call) if member is not None and member.call is not None else None
    if (built or "").rsplit(".", 1)[-1] != "ModuleDict":
        return None
    return False, DATA, items[key.value.value]


# Moves that hand back the picked module (`self.experts[k].to(device)`: `holds.unmoved`).
_MOVES = frozenset({"to", "cuda", "cpu", "train", "eval", "requires_grad_", "float", "half", "bfloat16"})


def _picked(
    expr: cst.CSTNode, picks: dict, bound: dict[str, tuple[int, int]], before: int | None = None
) -> int | None:
    """The pick `expr` is, or holds through a binding made before position `before`."""
    if id(expr) in picks:
        return id(expr)
    text = expr.value if isinstance(expr, cst.Name) else code_of(expr) if isinstance(expr, cst.Attribute) else None
    if text is None or text not in bound:
        return None
    key, at = bound[text]
    return key if before is None or at < before else None


def _keyed(node: cst.CSTNode) -> bool:
    """A subscript or a `getattr(obj, key)` whose key is not a literal."""
    kind = type(node)
    if kind is cst.Subscript:
        return not all(_literal(element.slice) for element in node.slice)
    if kind is cst.Call and _drawn_from(node) is not None:
        return True
    return kind is cst.Call and isinstance(node.func, cst.Name) and node.func.value == "getattr" and len(node.args) >= 2 \
        and not _literal(node.args[1].value)


# Draws of an item (or several) out of a sequence: `random.choice(self.layers)`, `np.random.choice(self.heads)`.
_DRAWS = {"random.choice": HOST_RANDOM, "random.sample": HOST_RANDOM, "random.choices": HOST_RANDOM,
          "np.random.choice": HOST_RANDOM, "numpy.random.choice": HOST_RANDOM}


def _drawn_from(node: cst.Call) -> cst.BaseExpression | None:
    """The sequence a random draw picks items of (`self.layers` in `random.choice(self.layers)`), or None."""
    name = dotted(node.func)
    if name not in _DRAWS or not node.args or node.args[0].keyword is not None:
        return None
    return node.args[0].value


def _container_item(node: cst.CSTNode, calls: _Calls) -> bool:
    """Does `node` take a module, or a slice of modules, out of a container by a key that is not a literal
    (`self.experts[s]`, `model.heads[k]` of a model the code holds, `getattr(self, name)`)?"""
    kind = type(node)
    if kind is cst.Subscript:
        if all(_literal(element.slice) for element in node.slice):
            return False
        return calls.is_module_sequence(node.value) or _module_mapping(node.value, calls) or _module_item(node, calls) \
            or _item_of_self(node.value, calls)
    if kind is cst.Call and (drawn := _drawn_from(node)) is not None:  # `random.choice(self.layers)`
        return calls.is_module_sequence(drawn) or _module_mapping(drawn, calls)
    if kind is cst.Call and isinstance(node.func, cst.Name) and node.func.value == "getattr" and len(node.args) >= 2:
        owner = node.args[0].value
        if _literal(node.args[1].value):
            return False
        return (isinstance(owner, cst.Name) and owner.value == "self") or _module_item(owner, calls)
    return False


def _item_of_self(expr: cst.BaseExpression, calls: _Calls) -> bool:
    """Is `expr` `self` in a module class whose items are its submodules: a container's subclass, or a class that
    hands them out by `__getitem__` (`self[self._sampled](x)` in a layer choosing among candidates)?"""
    cls = getattr(calls, "cls", None)
    if not (type(expr) is cst.Name and expr.value == "self") or cls is None or not cls.is_module:
        return False
    return bool(cls.container_kind) or items_are_modules(cls)


def _module_item(expr: cst.BaseExpression, calls: _Calls) -> bool:
    """Is `expr` a module (`self.layers[k]`; `model.layers[k]`, `self.policy.heads[k]` of a model held outside its
    class)?"""
    classes_of = getattr(calls, "classes_of", None)
    return classes_of is not None and classes_of(expr) is not None


def _pick(
    node: cst.CSTNode, taint: Taint, *names: dict[str, str],
) -> tuple[bool, str, str] | None:
    """(is a slice, taint kind, source) when a container item `node` is taken by a per-rank key."""
    if type(node) is cst.Subscript:
        is_slice = any(isinstance(element.slice, cst.Slice) for element in node.slice)
        for element in node.slice:
            found = _key_kind(element.slice, taint, *names)
            if found is not None:
                return (is_slice, *found)
        return None
    if _drawn_from(node) is not None:  # the draw is the key: several items for `sample`/`choices`
        name = dotted(node.func) or ""
        return (name.endswith(("sample", "choices")), _DRAWS[name], f"{name}()")
    found = _key_kind(node.args[1].value, taint, *names)  # type: ignore[attr-defined]
    return (False, *found) if found is not None else None


def _module_mapping(expr: cst.BaseExpression, calls: _Calls) -> bool:
    """A ModuleDict member (its items are modules): `self.heads`."""
    classes_of = getattr(calls, "classes_of", None)  # (code outside a model class resolves no members)
    classes = classes_of(expr) if classes_of is not None else None
    return bool(classes) and any(ref.rsplit(".", 1)[-1] in _CONTAINERS for ref in classes)


_CONTAINERS = ("ModuleDict", "ModuleList", "Sequential")


def _key_kind(
    key: cst.CSTNode, taint: Taint, rank_names: dict[str, str],
    reduced_names: dict[str, str],
) -> tuple[str, str] | None:
    """What makes a container key differ between ranks, if anything."""
    if _literal(key):
        return None
    kinds = taint.of(key)
    for kind in (RANK, *sorted(k for k in kinds if k != RANK)):
        if kind in kinds:
            return kind, kinds[kind]
    for node in walk(key):
        if type(node) is cst.Name and node.value in rank_names:
            return RANK, rank_names[node.value]
    for node in walk(key):
        if type(node) is cst.Name and node.value in reduced_names:
            return DATA, reduced_names[node.value]
        source = _index_reduction(node)
        if source is not None:
            return DATA, source
    return None


def _on_self(expr: cst.BaseExpression) -> bool:
    """`self.usage` / `self.counts.float()`: state of the module, the same on every rank; not what a call on it
    computes from a value it is handed (`self.router(x)`: a submodule's output for this rank's input)."""
    while isinstance(expr, (cst.Attribute, cst.Subscript, cst.Call)):
        if isinstance(expr, cst.Call):
            if any(_handed_value(arg.value) for arg in expr.args):
                return False
            expr = expr.func
        else:
            expr = expr.value
    return isinstance(expr, cst.Name) and expr.value == "self"


def _handed_value(arg: cst.BaseExpression) -> bool:
    """Is a call's argument a value of the caller (`x`, `h[:, 0]`), not a literal, the module's own state or a
    property of a tensor (`x.device`, `x.dtype`)?"""
    if _literal(arg) or (isinstance(arg, cst.Attribute) and arg.attr.value in VALUE_FREE_ATTRS):
        return False
    return not _on_self(arg)


def _rank_names(flat: Flat, taint: Taint) -> dict[str, str]:
    """Locals computed from the rank, also through a table indexed by it (`start = offsets[rank]`), which `Taint`
    treats as this rank's share of the data; for a module key it picks modules by rank."""

    def seed(part: cst.CSTNode) -> str | None:
        if type(part) is cst.Name and known.is_rank_name(part.value):
            return part.value
        if type(part) is cst.Call:
            return taint.of(part).get(RANK)
        return None

    return _names_from(flat, seed)


def _reduced_names(flat: Flat) -> dict[str, str]:
    """Locals computed from an index a tensor's values choose (`best = torch.argmax(scores)`), not the module's
    own state (`self.usage.argmin()`)."""
    return _names_from(flat, _index_reduction)


def _index_reduction(node: cst.CSTNode) -> str | None:
    """`scores.argmax(-1)` / `torch.topk(errors, 1)` on a value that is not the module's state: its text."""
    if type(node) is not cst.Call:
        return None
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value in _INDEX_REDUCTIONS:
        if isinstance(func.value, cst.Name) and func.value.value in ("torch", "np", "numpy"):
            return code_of(node) if node.args and not _on_self(node.args[0].value) else None
        return None if _on_self(func.value) else code_of(node)
    if isinstance(func, cst.Name) and func.value in _INDEX_REDUCTIONS and node.args:  # `from torch import argmax`
        return None if _on_self(node.args[0].value) else code_of(node)
    return None


def _names_from(flat: Flat, seed: Callable[[cst.CSTNode], str | None]) -> dict[str, str]:
    """Locals whose assigned value contains a seed (or a local already found), with the seed's text."""
    names: dict[str, str] = {}
    for _ in range(2):
        for node, _ctx in flat.nodes:
            targets, value = targets_of(node)  # (a loop variable takes its items from the iterable)
            if value is None:
                continue
            source = None
            for part in walk(value):
                if type(part) is cst.Name and part.value in names:
                    source = names[part.value]
                    break
                source = seed(part)
                if source is not None:
                    break
            if source is None:
                continue
            for target in targets:
                for name in bound_names(target):
                    names.setdefault(name, source)
    return names


def _literal(expr: cst.CSTNode) -> bool:
    if isinstance(expr, cst.Index):
        expr = expr.value
    if isinstance(expr, cst.Slice):
        return all(part is None or _literal(part) for part in (expr.lower, expr.upper, expr.step))
    if isinstance(expr, cst.UnaryOperation):
        return _literal(expr.expression)
    return isinstance(expr, (cst.Integer, cst.SimpleString, cst.ConcatenatedString, cst.Float))
