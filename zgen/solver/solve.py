"""Check config values against the rules: violations with their unsat cores, fixes, `"auto"` resolution.

Every key a rule mentions is a z3 variable `k` plus a boolean `has(k)` (written
by the user, or given for a launch fact). Each written value enters the solver
as a *tracked assumption* `lit(k) -> has(k) and k == value`, each absent key as
`lit(k) -> not has(k)`; DeepSpeed's defaults and derivations (`[[derive]]`) say
what an absent key is. A rule that is unsatisfiable under the assumptions is
violated, and the unsat core names exactly the keys that conflict. The fix is
the cheapest set of keys (by each key's `fix_cost`) that, left free, lets z3
satisfy the rule and every error rule that held, with numbers moved as little
as possible. `"auto"` keys are free variables; the model says what they
resolve to and a second query says whether the config forces that value.

When every value is concrete, each rule is first evaluated directly
(`zgen.solver.evaluate`, same semantics); z3 is built only for the rules that
fail or cannot be decided that way, so a clean config costs no solving.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

from zgen.config.schema import Version
from zgen.config.validate import ConfigValues
from zgen.findings import Severity
from zgen.solver import expr as E
from zgen.solver.context import WORLD_SIZE_BOUND, Context
from zgen.solver.evaluate import Env, compiled
from zgen.solver.fix import Change, fix_text, format_value, smallest_fix
from zgen.solver.rules import Rule, RuleSet
from zgen.solver.sweep import valid_world_sizes
from zgen.solver.symbols import RLIMIT, Tracked, fresh_context, literal

__all__ = ["LaunchValues", "Change", "Violation", "Outcome", "solve", "WORLD_SIZE_BOUND"]


@dataclass(frozen=True, slots=True)
class LaunchValues:
    """Launch facts as plain ints (None = not given)."""

    world_size: int | None = None
    gpus_per_node: int | None = None
    gpu_mem: int | None = None
    params: int | None = None
    seq_len: int | None = None


@dataclass(frozen=True, slots=True)
class Violation:
    """A rule that cannot hold under the user's values; `keys` are the unsat core (anchor first).

    `message` and `help` are the rule's templates filled with the values the
    config has; `values` are those values.
    """

    rule: Rule
    keys: tuple[str, ...]
    values: dict
    message: str
    help: str | None
    fix: tuple[Change, ...] = ()
    every_world_size: bool = False
    fix_unique: bool = False  # no other edit of the same cost works (so `--fix` may apply it)


@dataclass(frozen=True, slots=True)
class Outcome:
    """`values`: canonical key -> value (written, default, derived or solved); `derived` explains derived keys."""

    violations: tuple[Violation, ...]
    conflict: tuple[str, ...] | None
    values: dict
    forced_autos: frozenset[str] = frozenset()
    valid_world_sizes: tuple[int, ...] | None = None
    world_size: int | None = None
    derived: dict = field(default_factory=dict)
    conflict_rules: tuple[str, ...] = ()  # the codes of the rules in the conflict's unsat core


def _render(template, env: Env, fix: str, autos: set[str] = frozenset()) -> str:
    """Fill a message template. An `"auto"` key shows as "auto", and a computation involving one as `?`."""
    out = []
    for part in template.parts:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, E.Name) and part.name == "$fix":
            out.append(fix or "change one of the keys involved")
        elif isinstance(part, E.Name) and (env.resolve(part.name) or part.name) in autos:
            out.append('"auto"')
        elif any((env.resolve(n) or n) in autos for n in E.names_in(part)):
            out.append("?")
        else:
            out.append(format_value(compiled(part)(env)))
    return "".join(out)


def solve(ruleset: RuleSet, values: ConfigValues, launch: LaunchValues, version: Version,
          extra_valid: Callable[[int, dict], bool] | None = None, prefer: dict | None = None) -> Outcome:
    """Check every rule; see the module docstring. `extra_valid(w, values)` adds a check per world size.

    Without a world size, the valid sizes up to the bound are listed and the
    rest of the check runs at the smallest of them; when there is none, the
    findings say which rules or keys rule out every size.
    """
    fresh_context()
    ctx = Context(ruleset, values, launch, version)
    ctx.prefer = prefer or {}
    errors = [i for i, r in enumerate(ctx.rules) if r.severity == Severity.ERROR]
    base = ctx.base_values()
    if launch.world_size is not None:
        return _check_at(ctx, base, errors)
    sizes, ever = valid_world_sizes(ctx, base, errors, extra_valid)
    if sizes:
        ctx.launch = replace(launch, world_size=sizes[0])
        return replace(_check_at(ctx, base, errors), valid_world_sizes=sizes)
    return _nowhere(ctx, base, errors, ever)


def _check_at(ctx: Context, base: dict, errors: list[int]) -> Outcome:
    """The check at the world size in `ctx.launch`."""
    world = ctx.launch.world_size
    now = ctx.derive(dict(base, world_size=world))
    env = ctx.env(now)
    undecided = [i for i in range(len(ctx.rules)) if ctx.result(i, env) is not True]
    if not undecided and not ctx.autos:
        return Outcome((), None, now, frozenset(), None, world, _explain_derived(ctx, now))
    # The solver sees the rules that failed or could not be decided, and every error rule an "auto" reaches.
    reach = ctx.affected(ctx.autos | ctx.unknown)
    involved = sorted(set(undecided) | {i for i in errors if ctx.rule_keys[i] & reach})
    t = Tracked(ctx, involved)
    violated = [i for i in undecided if t.check([t.rule_lit[i]]) is False]
    errors_holding = [i for i in errors if i not in violated]
    holding_lits = [t.rule_lit[i] for i in involved if i not in violated]
    if t.check(holding_lits) is not True:
        t.check([])
    model_values = t.sym.model_values(t.solver.model()) if t.last_sat else {}
    shown = dict(now)
    shown.update({k: v for k, v in model_values.items() if now.get(k) is None})
    violations = [_violation(ctx, t, i, errors_holding, shown, every=False) for i in violated]
    conflict, conflict_rules = None, ()
    error_lits = [t.rule_lit[i] for i in errors_holding if i in t.rule_lit]
    if t.check(error_lits) is False:
        conflict = t.core_keys(None)
        conflict_rules = tuple(dict.fromkeys(ctx.rules[i].code for i in t.core_rules()))
    resolved, forced = dict(now), set()
    if conflict is None and ctx.autos:
        solved, forced = _resolve_autos(t, error_lits)
        resolved.update({k: v for k, v in solved.items() if resolved.get(k) is None or k in ctx.autos})
    return Outcome(tuple(violations), conflict, resolved, frozenset(forced), None, world,
                   _explain_derived(ctx, resolved), conflict_rules)


def _nowhere(ctx: Context, base: dict, errors: list[int], ever: list) -> Outcome:
    """No world size up to the bound works: report the rules that fail at every size, or the keys that clash."""
    now = ctx.derive(dict(base, world_size=1))
    env = ctx.env(now)
    failing = [i for i in range(len(ctx.rules))
               if (ever[i] is False if ctx.depends_on_world(i) else ctx.result(i, env) is False)]
    t = Tracked(ctx, sorted(set(failing) | set(errors)))
    violated = [i for i in failing if t.check([t.rule_lit[i]]) is False]
    errors_holding = [i for i in errors if i not in violated]
    violations = [_violation(ctx, t, i, errors_holding, now, every=ctx.depends_on_world(i)) for i in violated]
    conflict, conflict_rules = None, ()
    if not any(ctx.rules[i].severity == Severity.ERROR for i in violated):
        if t.check([t.rule_lit[i] for i in errors]) is False:
            conflict = t.core_keys(None)
            conflict_rules = tuple(dict.fromkeys(ctx.rules[i].code for i in t.core_rules()))
    return Outcome(tuple(violations), conflict, now, frozenset(), (), None, _explain_derived(ctx, now), conflict_rules)


def _violation(ctx: Context, t, i: int, keep: list[int], shown: dict, every: bool) -> Violation:
    rule = ctx.rules[i]
    t.check([t.rule_lit[i]])
    core = t.core_keys(rule)
    fix, unique = smallest_fix(ctx, i, core, keep, shown)
    env = ctx.env(shown)
    message = _render(rule.message, env, "", ctx.autos)
    if every:
        message += f" (and at every other world size up to {WORLD_SIZE_BOUND})"
    words = fix_text(fix)
    help_text = _render(rule.help, env, words, ctx.autos) if rule.help else words
    return Violation(rule, core, shown, message, help_text or None, fix, every, unique)


def _resolve_autos(t, assumptions: list) -> tuple[dict, set[str]]:
    """A model of the config in which each `"auto"` key prefers the value its filler uses by default."""
    z3, ctx, sym = t.z3, t.ctx, t.sym
    opt = z3.Optimize()
    opt.add(t.solver.assertions())
    opt.add(t.lits() + assumptions)
    autos = sorted(k for k in ctx.autos if k in sym.vars)
    for key in autos:
        want = ctx.prefer.get(key, ctx.values.settings[key].assumed)
        if want is None:
            want = ctx.default(key)
        if want is not None:
            opt.add_soft(sym.var(key) == literal(z3, want, sym.type_of(key)), 1)
    opt.set("rlimit", RLIMIT)
    if opt.check() != z3.sat:
        if t.check(assumptions) is not True:
            return {}, set()
        return sym.model_values(t.solver.model()), set()
    values = sym.model_values(opt.model())
    forced = set()
    for key in autos:
        if values.get(key) is None:
            continue
        if t.check(assumptions + [sym.var(key) != literal(z3, values[key], sym.type_of(key))]) is False:
            forced.add(key)
    return values, forced


def _explain_derived(ctx: Context, values: dict) -> dict[str, str]:
    env = ctx.env(values)
    out: dict[str, str] = {}
    for d in ctx.derives:
        if d.key in out or ctx.written(d.key):
            continue
        if d.when is not None and compiled(d.when)(env) is not True:
            continue
        numbers = E.unparse(d.value, lambda n: format_value(values.get(ctx.table.resolve(n) or n)))
        out[d.key] = d.explain if numbers == format_value(values.get(d.key)) else f"{d.explain} = {numbers}"
    return out
