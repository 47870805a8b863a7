"""Where two runs part: the first call one makes and the other does not, and the statement that decided it.

Two runs of the same program (two simulated ranks, or one run and the same
with one decision answered the other way) are compared phase by phase. The
first index where their calls differ is the divergence; a run that stopped
with an error before it shows nothing (a crash is not a hang). The statement
that decided it is found in the events between the last common call and the
divergent one: walking both from the start, the last common line before they
part, *in the frame where they part*. Lines carry their frame's depth: when
the runs part, the deciding frame is the deepest one both were still in
(the last common line's, or, when both runs' next lines are shallower, the
frame they both returned to), and the statement is the last common line at
that depth or above: an `if` whose test called a helper (a config lookup, a
property) is named, not the helper's last line. When both runs then leave
that frame before calling anything (a helper that only returns `True` or
`False`: `while has_unfinished(...)`), the caller's statement decides. A detour both runs come back
from (rank 0 logs a line, then both go on) is skipped when it returns, in the
deciding frame or above, to a line neither had run in this stretch; a detour
through a line already run (a `continue` back to the loop head) is the
decision. Lines of callees never count as the way back. When the runs
run the same lines to one statement and it calls different modules, the
module was picked before: the statement that bound the name it calls
(`head = random.choice(heads)`, then `head(x)`) in the same frame decides;
for a loop variable, the statement that bound the list it iterates
(`layers = drop(self.layers)`), and a loop over anything else decides at the call.
An attribute called (`self.current(x)`) parts where a line run before in the
phase set it, in any frame (`self.current = random.choice(self.branches)` in a
method called earlier); a subscript called (`self.blocks[i](x)`) where its
index or container was bound (`i = torch.randint(...).item()`). Only lines
that ran are searched, for statements whose targets bind the name.

`data_code` names the rule for a decision that depends on the data, from the
statement: a `while`, or an `if` that leaves the loop or the function, is an
exit (ZG204); an `if` that only tests inputs for `None` is an optional input
(ZG205); a loop over a selection, an `if` around a call, or a lookup that
picks the submodule is a data-dependent selection (ZG203).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .events import CALL, Phase
from .sites import statement_node

__all__ = ["Parting", "first_divergence", "parting_line", "data_code"]

# Events searched for a detour's way back; a longer stretch without a common line is not a detour.
_WINDOW = 4000


@dataclass(frozen=True, slots=True)
class Parting:
    """Where two runs part: the phase, the deciding line (file, line) or None, and each run's next call."""

    phase: str
    site: tuple[str, int] | None
    ours: str | None  # the reference's call there (None: its phase ended)
    theirs: str | None


def first_divergence(ours: list[Phase], theirs: list[Phase], theirs_complete: bool) -> Parting | None:
    """The first place the calls of `theirs` differ from `ours`, phase by phase.

    `theirs_complete` is False when the other run stopped early (an error): then
    only a call it made that `ours` did not make counts, not one it did not reach.
    """
    others = {p.name: p for p in theirs}
    for a in ours:
        b = others.get(a.name)
        if b is None:
            continue  # it stopped before this phase, or skipped it (a forward-only run has no backward)
        ca, cb = a.call_names(), b.call_names()
        k = next((i for i, (x, y) in enumerate(zip(ca, cb)) if x != y), min(len(ca), len(cb)))
        if k == len(ca) == len(cb):
            continue
        if k == len(cb) and not theirs_complete and b is theirs[-1]:
            return None  # it stopped before making the call: no evidence
        start_a, start_b = _in_step(a, b, k)
        end_a = a.calls[k] + 1 if k < len(ca) else len(a.events)
        end_b = b.calls[k] + 1 if k < len(cb) else len(b.events)
        site = parting_line(a.events[start_a:end_a], b.events[start_b:end_b], a.events[:start_a])
        return Parting(a.name, site, ca[k] if k < len(ca) else None, cb[k] if k < len(cb) else None)
    return None


def _in_step(a: Phase, b: Phase, k: int) -> tuple[int, int]:
    """Where to look for the decision before the k-th calls differ: after the last call before it that both
    runs made from the same depth and left in step (the same next event). Usually the (k-1)-th; earlier when
    the runs were apart already while making the same calls (one made them from a helper the other did not
    run: an extra pass of the same module)."""
    for m in range(k - 1, -1, -1):
        ia, ib = a.calls[m], b.calls[m]
        if a.events[ia] == b.events[ib] and (ia + 1 < len(a.events)) == (ib + 1 < len(b.events)) and (
                ia + 1 >= len(a.events) or a.events[ia + 1] == b.events[ib + 1]):
            return ia + 1, ib + 1
    return 0, 0


def parting_line(a: list[tuple], b: list[tuple], before: list[tuple] = ()) -> tuple[str, int] | None:
    """The deciding line (file, line) of two event lists that part (see the module docstring); `before`: the
    events both runs had in step before these (where a name the parting statement calls may have been bound)."""
    i = j = 0
    common: list[tuple] = []
    seen: set[tuple] = set()
    while True:
        while i < len(a) and j < len(b) and a[i] == b[j]:
            if a[i][0] is not CALL:
                common.append(a[i])
                seen.add(a[i])
            i += 1
            j += 1
        if i >= len(a) or j >= len(b):
            break
        deciding = _deciding_depth(common, a, b, i, j)
        back = _way_back(a, b, i, j, seen, deciding)
        if back is None:
            break
        i, j = back
    if not common:
        return None
    deciding = _deciding_depth(common, a, b, i, j)
    while deciding > 1 and _returns_first(a, i, deciding) and _returns_first(b, j, deciding):
        deciding -= 1  # both left the frame before any call: its caller acts on what it returned
    last = common[-1]
    if i < len(a) and j < len(b) and a[i][0] is CALL and b[j][0] is CALL and last[2] == deciding:
        # One statement, the same lines to it, a different module called: what it calls was picked before.
        return _picked([*before, *common]) or (last[0], last[1])
    for e in reversed(common):
        if e[2] <= deciding:
            return e[0], e[1]
    return last[0], last[1]


def _picked(common: list[tuple]) -> tuple[str, int] | None:
    """The statement that bound what the last line of `common` calls, or None (the call decides).

    What it calls is a local name (`head(x)` after `head = random.choice(heads)`), an attribute
    (`self.current(x)` after `self.current = random.choice(self.branches)`), or a subscript whose index or
    container is one of those (`self.blocks[i](x)` after `i = torch.randint(...).item()`). A local name is
    looked for in the same frame since it was entered; an attribute in any line run before in the phase (a
    method called earlier, or another module's forward, may have set it). A loop variable follows to the local
    list the loop iterates; a loop over anything else, or a `with` target, is the loop's decision."""
    file, line, depth = common[-1]
    node = statement_node(file, line)
    if node is None:
        return None
    wanted: set[tuple[str, str]] = set()
    for c in ast.walk(node):
        if isinstance(c, ast.Call):
            wanted |= _callee_keys(c.func)
    for e in reversed(common[:-1]):
        if not wanted:
            return None
        if e[0] is CALL or (e[0] == file and e[1] == line):
            continue
        if e[2] < depth:
            # Out of the frame's start: a local name came from elsewhere (an argument, a global).
            wanted = {k for k in wanted if k[0] == "attr"}
            depth = e[2]
        local = e[2] == depth and e[0] == file
        stmt = statement_node(e[0], e[1])
        if stmt is None:
            continue
        keys = wanted if local else {k for k in wanted if k[0] == "attr"}
        if not keys or not _binds(stmt, keys):
            continue
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            followed = _iterated_names(stmt.iter)
            if not followed:
                return None  # a loop over a fixed collection (`self.layers`): the loop decides
            wanted = {("name", n) for n in followed}  # a loop over a list picked in this frame
            continue
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            return None
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            return e[0], e[1]
    return None


def _callee_keys(func: ast.expr) -> set[tuple[str, str]]:
    """What a call's callee is picked by: ("name", id) for a local name, ("attr", attr) for an attribute of a
    name (`self.current`), and for a subscript (`self.blocks[i]`) those of its index and its container."""
    if isinstance(func, ast.Name):
        return {("name", func.id)}
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return {("attr", func.attr)}
    if isinstance(func, ast.Subscript):
        index = func.slice
        parts = index.elts if isinstance(index, ast.Tuple) else [index]
        keys = _callee_keys(func.value)
        for part in parts:
            keys |= _callee_keys(part)
        return keys
    return set()


def _iterated_names(it: ast.expr) -> set[str]:
    """The local names a loop iterates: `xs`, `enumerate(xs)`, `zip(xs, ys)`; empty for anything else."""
    if isinstance(it, ast.Name):
        return {it.id}
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id in ("enumerate", "zip", "reversed"):
        return {a.id for a in it.args if isinstance(a, ast.Name)}
    return set()


def _binds(stmt: ast.stmt, keys: set[tuple[str, str]]) -> bool:
    """Whether the statement's own targets (not its body's) bind one of `keys` (see `_callee_keys`)."""
    if isinstance(stmt, ast.Assign):
        targets: list[ast.AST] = list(stmt.targets)
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
        targets = [stmt.target]
    elif isinstance(stmt, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in stmt.items if item.optional_vars is not None]
    else:
        return False
    for t in targets:
        for n in ast.walk(t):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and ("name", n.id) in keys:
                return True
            if (isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store) and isinstance(n.value, ast.Name)
                    and ("attr", n.attr) in keys):
                return True
    return False


def _deciding_depth(common: list[tuple], a: list[tuple], b: list[tuple], i: int, j: int) -> int:
    """The depth of the frame the runs part in: the last common line's, or shallower when both go on above it."""
    last = common[-1][2] if common else 0
    da = a[i][2] if i < len(a) else 0
    db = b[j][2] if j < len(b) else 0
    return min(last, max(da, db))


def _returns_first(events: list[tuple], start: int, depth: int) -> bool:
    """Whether the run returns from the frame at `depth` before its next call (or its phase ends)."""
    for e in events[start:]:
        if e[0] is CALL:
            return False
        if e[2] < depth:
            return True
    return True


def _way_back(a: list[tuple], b: list[tuple], i: int, j: int, seen: set[tuple],
              deciding: int) -> tuple[int, int] | None:
    """The first line both lists reach again, in the deciding frame or above, after a detour through new
    lines only, or None."""
    where_b: dict[tuple, int] = {}
    for q in range(j, min(len(b), j + _WINDOW)):
        e = b[q]
        if e[0] is CALL:
            break
        if e[2] > deciding:
            continue
        if e in seen:
            break
        where_b.setdefault(e, q)
    for p in range(i, min(len(a), i + _WINDOW)):
        e = a[p]
        if e[0] is CALL:
            return None
        if e[2] > deciding:
            continue
        if e in seen:
            return None
        q = where_b.get(e)
        if q is not None:
            return p, q
    return None


def data_code(site: tuple[str, int]) -> str:
    """ZG203, ZG204 or ZG205 for a data-dependent decision at `site`, by the statement there."""
    node = statement_node(*site)
    if isinstance(node, ast.While) or isinstance(node, (ast.Break, ast.Return)):
        return "ZG204"
    if isinstance(node, ast.If):
        if _leaves(node):
            return "ZG204"
        if _tests_none(node.test):
            return "ZG205"
    return "ZG203"


def _leaves(node: ast.If) -> bool:
    """Whether a branch of the `if` breaks out of its loop or returns (not counting nested loops or functions)."""
    todo: list[ast.AST] = [*node.body, *node.orelse]
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.Break, ast.Return)):
            return True
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.For, ast.While)):
            continue
        todo.extend(ast.iter_child_nodes(n))
    return False


def _tests_none(test: ast.expr) -> bool:
    """`x is None`, `x is not None`, and `and`/`or`/`not` of them only."""
    if isinstance(test, ast.BoolOp):
        return all(_tests_none(v) for v in test.values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _tests_none(test.operand)
    return (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Is, ast.IsNot))
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None)
