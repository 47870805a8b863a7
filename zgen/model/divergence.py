"""Where ranks can run different sequences of submodules (shared by the ZG2xx rules).

Under ZeRO-3 every submodule call all-gathers that module's parameters, a
collective all ranks must join in the same order. A call is divergent when
whether it runs (or how often) depends on something that differs between
ranks: a test on the rank, a random draw, or a data-dependent selection.
This module finds such decisions once per method; each ZG2xx rule keeps the
kinds it is about.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import libcst as cst

from .flow import DATA, HOST_RANDOM, RANDOM, RANK, Ctx, Flat, ModuleCalls, Taint, flat_of
from .index import ClassInfo, MethodInfo, ModelIndex
from .tree import call_name

__all__ = ["Divergence", "divergences", "find_divergences", "message", "GATE", "ITERATE", "SKIP", "EXIT", "WHILE"]

GATE = "gate"  # the call sits under an if / conditional expression on the value
ITERATE = "iterate"  # the call sits in a loop over the value
SKIP = "skip"  # a `continue` on the value skips calls later in the loop
EXIT = "exit"  # a `break`/`return` on the value skips the remaining calls
WHILE = "while"  # the call sits in a `while` loop whose test is the value


@dataclass(frozen=True, slots=True)
class Divergence:
    """One rank-divergent decision about running `callee`."""

    kind: str  # flow.RANK / RANDOM / HOST_RANDOM / DATA
    effect: str
    node: cst.CSTNode  # the deciding expression (report here)
    source: str  # what makes it differ, e.g. `torch.rand()`
    callee: str  # the submodule whose call it decides, e.g. `self.layers[i]`


def divergences(index: ModelIndex, cls: ClassInfo, method: MethodInfo) -> list[Divergence]:
    """The divergent decisions in one method of a module class (cached per class and method)."""
    key = ("_divergences", cls.name)
    cache = method.__dict__
    if key not in cache:
        cache[key] = _find(index, cls, method)
    return cache[key]


def _find(index: ModelIndex, cls: ClassInfo, method: MethodInfo) -> list[Divergence]:
    flat = flat_of(method)
    if flat is None:
        return []
    return find_divergences(flat, lambda: ModuleCalls(index, cls, flat, method.name), Taint(index, cls, flat))


def find_divergences(flat: Flat, make_calls: Callable[[], Calls], taint: Taint) -> list[Divergence]:
    """Divergent decisions in a flattened function, given what counts as a synchronising call.

    Tainted decisions are looked for first: most methods have none, and then
    the (costlier) question of which calls run submodules is never asked.
    """
    if not any(taint.of(test) for test in _decisions(flat)):
        return []
    calls = make_calls()
    callee_of = calls.callee
    sites: list[tuple[cst.Call, Ctx, str]] = []
    for node, ctx in flat.nodes:
        if type(node) is cst.Call:
            callee = callee_of(node)
            if callee is not None:
                sites.append((node, ctx, callee))
    if not sites:
        return []
    found: dict[tuple[int, str], Divergence] = {}

    def add(kind: str, effect: str, node: cst.CSTNode, source: str, callee: str) -> None:
        found.setdefault((id(node), kind), Divergence(kind, effect, node, source, callee))

    rank_gated: dict[str, int] = {}  # callee text -> calls of it under some rank test
    for _call, ctx, callee in sites:
        if any(RANK in taint.of(test) for test in ctx.conds):
            rank_gated[callee] = rank_gated.get(callee, 0) + 1
    for _call, ctx, callee in sites:
        if ctx.guarded:
            continue
        for test in ctx.conds:
            effect = WHILE if _is_while_test(flat, test) else GATE
            for kind, source in taint.of(test).items():
                if kind == RANK and rank_gated.get(callee, 0) > 1:
                    # The same call in another rank-dependent branch (`if main: ... barrier()` /
                    # `else: barrier()`, "main process first"): every rank makes it once.
                    continue
                add(kind, effect, test, source, callee)
        for loop in ctx.loops:
            iterable = _loop_iter(loop)
            if iterable is None or _fixed_length(iterable, calls):
                continue
            # How often a loop runs follows the values it iterates, not the branches they were built in.
            for kind, source in taint.of(iterable, direct=True).items():
                add(kind, ITERATE, iterable, source, callee)

    exits = [(n, c) for n, c in flat.nodes if not c.guarded and isinstance(n, (cst.Continue, cst.Break, cst.Return))]
    for node, ctx in exits:
        position = flat.position[id(node)]
        if isinstance(node, cst.Return):
            later = [
                (call, c, callee)
                for call, c, callee in sites
                if flat.position[id(call)] > position and not _shares_test(c, ctx)
            ]
            tests = ctx.conds
        else:
            if not ctx.loops:
                continue
            loop = ctx.loops[-1]
            later = [(call, c, callee) for call, c, callee in sites if loop in c.loops]
            if isinstance(node, cst.Continue):  # skips only the rest of this iteration
                later = [site for site in later if flat.position[id(site[0])] > position]
            else:  # `break` skips the rest of the loop; name the first call after it if any
                later.sort(key=lambda site: flat.position[id(site[0])] < position)
            depth = len(ctx.loops)
            tests = tuple(t for t, d in zip(ctx.conds, ctx.depths) if d == depth)
        if not later:
            continue
        effect = SKIP if isinstance(node, cst.Continue) else EXIT
        for test in tests:
            if _exits_both_ways(flat, test, type(node), exits):
                continue  # `if rank == 0: return a` / `else: return b`: every rank leaves here
            for kind, source in taint.of(test).items():
                add(kind, effect, test, source, later[0][2])
    return sorted(found.values(), key=lambda d: flat.position.get(id(d.node), 0))


def _decisions(flat: Flat) -> list[cst.CSTNode]:
    """Every expression that decides what runs: tests, loop iterables."""
    out: list[cst.CSTNode] = []
    for node, _ctx in flat.nodes:
        kind = type(node)
        if kind in (cst.If, cst.While, cst.IfExp):
            out.append(node.test)
        elif kind is cst.BooleanOperation:
            out.append(node.left)
        elif kind is cst.For:
            out.append(node.iter)
        elif kind in (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp):
            comp = node.for_in
            while comp is not None:
                out.append(comp.iter)
                out.extend(test.test for test in comp.ifs)
                comp = comp.inner_for_in
    return out


class Calls(Protocol):
    """What counts as a synchronising call in a function (submodule calls, collectives)."""

    def callee(self, call: cst.Call) -> str | None: ...

    def is_module_sequence(self, expr: cst.BaseExpression) -> bool: ...


def _fixed_length(iterable: cst.BaseExpression, calls: Calls) -> bool:
    """`zip(self.layers, xs)` / `enumerate(self.layers)`: the module list fixes the trip count."""
    if isinstance(iterable, cst.Call) and call_name(iterable) in {"zip", "enumerate"}:
        return any(calls.is_module_sequence(arg.value) for arg in iterable.args)
    return calls.is_module_sequence(iterable)


def _exits_both_ways(flat: Flat, test: cst.CSTNode, kind: type, exits: list) -> bool:
    """Do both branches of the `if` whose test is `test` hold an exit of this kind?"""
    branch = flat.parent.get(id(test))
    if not isinstance(branch, cst.If) or branch.test is not test or branch.orelse is None:
        return False
    sides = set()
    for node, _ctx in exits:
        if type(node) is kind:
            side = _side(flat, node, branch)
            if side:
                sides.add(side)
    return sides == {"body", "orelse"}


def _side(flat: Flat, node: cst.CSTNode, branch: cst.If) -> str | None:
    """'body' or 'orelse' if `node` sits in that branch of `branch`, else None."""
    child, parent = node, flat.parent.get(id(node))
    while parent is not None:
        if parent is branch:
            return "body" if child is branch.body else "orelse" if child is branch.orelse else None
        child, parent = parent, flat.parent.get(id(parent))
    return None


def _is_while_test(flat, test: cst.CSTNode) -> bool:
    parent = flat.parent.get(id(test))
    return isinstance(parent, cst.While) and parent.test is test


def _loop_iter(loop: cst.CSTNode) -> cst.BaseExpression | None:
    if isinstance(loop, cst.For):
        return loop.iter
    if isinstance(loop, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
        return loop.for_in.iter
    return None


def _shares_test(a: Ctx, b: Ctx) -> bool:
    """Do two nodes sit under the same if statement (same or other branch)?"""
    return any(any(t is u for u in b.conds) for t in a.conds)


_EFFECT = {
    GATE: "whether `{callee}` runs depends on `{test}`",
    ITERATE: "`{callee}` runs once per item of `{test}`",
    SKIP: "the loop skips `{callee}` when `{test}`",
    EXIT: "the remaining calls of `{callee}` are skipped when `{test}`",
    WHILE: "`{callee}` runs for as long as `{test}`",
}
_REASON = {
    RANK: "the process rank",
    RANDOM: "a random draw",
    HOST_RANDOM: "a host random draw",
    DATA: "this rank's data",
}


def message(d: Divergence, test: str) -> str:
    """The finding text for a divergence: what decides the call, and what differs between ranks."""
    what = _EFFECT[d.effect].format(callee=d.callee, test=test)
    return (
        f"{what}, which depends on {_REASON[d.kind]} (`{d.source}`); "
        "ranks that skip the call hang in its parameter all-gather"
    )
