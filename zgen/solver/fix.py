"""The smallest edit that makes a violated rule hold: which keys to change, and to what.

Candidate edits are the keys of the rule's unsat core, singly and in pairs,
cheapest first by each key's `fix_cost` (the world size costs 4, a section 3).
For each candidate z3 looks for values of just those keys (every other key
fixed at its current value, keys DeepSpeed derives from them following) that
satisfy the rule and every error rule that held, moving numbers as little as
possible. A written key is first kept and changed, then removed.

A fix is unique when no other candidate of the same cost and size also
works; only a unique fix is applied by `zgen check --fix`.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

from zgen.solver.context import RLIMIT, Context
from zgen.solver.rules import LAUNCH_FACTS
from zgen.solver.symbols import Symbols

__all__ = ["Change", "smallest_fix", "fix_text"]


@dataclass(frozen=True, slots=True)
class Change:
    """One edit of a fix: `action` is set, add, remove, or world (use another world size)."""

    key: str
    action: str
    value: object = None


def smallest_fix(ctx: Context, rule_index: int, core: tuple[str, ...], keep: list[int],
                 values: dict) -> tuple[tuple[Change, ...], bool]:
    """The cheapest edit of the core's keys that makes the rule and the kept rules hold, and whether it is unique."""
    changeable = [k for k in core if k not in LAUNCH_FACTS or (k == "world_size" and ctx.world_from_user)]
    options: list[tuple[int, tuple[str, ...]]] = [(ctx.cost(k), (k,)) for k in changeable]
    if len(changeable) <= 5:
        options += [(ctx.cost(a) + ctx.cost(b), (a, b)) for a, b in combinations(changeable, 2)]
    options.sort(key=lambda o: (o[0], len(o[1]), [changeable.index(k) for k in o[1]]))
    found: tuple[Change, ...] = ()
    rank = None
    for cost, free in options:
        if rank is not None and (cost, len(free)) != rank:
            break
        for keep_written in (True, False):
            if not keep_written and not any(ctx.written(k) and k not in LAUNCH_FACTS for k in free):
                continue
            changes = _try_fix(ctx, rule_index, set(free), keep, values, keep_written)
            if not changes:
                continue
            if found:
                return found, False  # another edit of the same cost works too
            found, rank = changes, (cost, len(free))
            break
    return found, bool(found)


def _try_fix(ctx: Context, rule_index: int, free: set[str], keep: list[int], values: dict,
             keep_written: bool) -> tuple[Change, ...] | None:
    # Without a given world size the fix must work at some world size, not at the one used for messages.
    affected = ctx.affected(free | ({"world_size"} if ctx.launch.world_size is None else set()))
    fixed = {k: v for k, v in values.items() if k not in affected}
    sym = Symbols(ctx, fixed, ctx.written)
    z3 = sym.z3
    opt = z3.Optimize()
    rules = [rule_index] + [i for i in keep if ctx.rule_keys[i] & affected]
    for i in rules:
        opt.add(sym.rule_term(ctx.rules[i]))
    opt.add(sym.derive_constraints(affected))
    for key in affected:
        opt.add(sym.key_constraints(key))
    for key in affected - free:
        if key not in LAUNCH_FACTS:
            opt.add(z3.Not(sym.has(key)))
    for key in free:
        if key in LAUNCH_FACTS:
            opt.add(sym.has(key))
        elif keep_written and ctx.written(key):
            opt.add(sym.has(key))
        elif not ctx.written(key):
            opt.add(sym.has(key))
        else:
            opt.add(z3.Not(sym.has(key)))
    # Move numbers as little as possible.
    for key in sorted(free):
        old = values.get(key)
        if sym.type_of(key) in ("int", "real") and isinstance(old, (int, float)) and not isinstance(old, bool):
            d = sym.var(key) - old
            opt.minimize(z3.If(d >= 0, d, -d))
    opt.set("rlimit", RLIMIT)
    if opt.check() != z3.sat:
        return None
    model = opt.model()
    got = sym.model_values(model)
    changes: list[Change] = []
    for key in sorted(free, key=lambda k: ctx.keys.index(k) if k in ctx.keys else 0):
        if key in LAUNCH_FACTS:
            changes.append(Change(key, "world", got.get(key)))
        elif ctx.written(key) and not keep_written:
            changes.append(Change(key, "remove"))
        elif ctx.written(key):
            if got.get(key) == values.get(key):
                continue
            changes.append(Change(key, "set", got.get(key)))
        else:
            changes.append(Change(key, "add", got.get(key)))
    return tuple(changes) or None


def fix_text(changes: tuple[Change, ...]) -> str:
    """`set `a` to 2 and remove `b``: the help sentence for a fix."""
    words = []
    for c in changes:
        if c.action == "remove":
            words.append(f"remove `{c.key}`")
        elif c.action == "world":
            words.append(f"run with world size {format_value(c.value)}")
        else:
            value = f'"{c.value}"' if isinstance(c.value, str) else format_value(c.value)
            words.append(f"set `{c.key}` to {value}")
    return " and ".join(words)


def format_value(value: object) -> str:
    """A value as messages show it: `true`, `16`, `0.1`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    if value is None:
        return "?"
    return str(value)
