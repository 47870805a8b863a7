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
from fractions import Fraction
from itertools import combinations
from typing import Callable

from zgen.config.schema import Key, Section, Version
from zgen.config.validate import AUTO, ConfigValues
from zgen.findings import Severity
from zgen.solver import expr as E
from zgen.solver.evaluate import Env, compiled
from zgen.solver.rules import LAUNCH_FACTS, Rule, RuleSet, key_table, version_in_range

__all__ = ["LaunchValues", "Change", "Violation", "Outcome", "solve", "WORLD_SIZE_BOUND"]

# Largest world size listed when none is given.
WORLD_SIZE_BOUND = 1024
# Cost of asking for a different world size in a fix (config edits cost 1-3).
_WORLD_COST = 4
# Deterministic effort limit for one optimisation (z3 resource units, not seconds, so output never varies).
_RLIMIT = 4_000_000


@dataclass(frozen=True, slots=True)
class LaunchValues:
    """Launch facts as plain ints (None = not given)."""

    world_size: int | None = None
    gpus_per_node: int | None = None
    gpu_mem: int | None = None
    params: int | None = None
    seq_len: int | None = None


@dataclass(frozen=True, slots=True)
class Change:
    """One edit of a fix: `action` is set, add, remove, or world (use another world size)."""

    key: str
    action: str
    value: object = None


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


def _schema_key(schema: Section, key: str) -> Key | Section | None:
    node: Section = schema
    parts = key.split(".")
    for i, part in enumerate(parts):
        if i == len(parts) - 1:
            return node.key_index.get(part) or node.section_index.get(part)
        nxt = node.section_index.get(part)
        if nxt is None:
            return None
        node = nxt
    return None


def _string_literals(node: E.Node, out: set[str]) -> None:
    if isinstance(node, E.Str):
        out.add(node.value)
    for child in E._children(node):
        _string_literals(child, out)


class _Context:
    """What every stage needs: active rules, derivations, keys with their types, defaults and written values."""

    def __init__(self, ruleset: RuleSet, values: ConfigValues, launch: LaunchValues, version: Version) -> None:
        self.values = values
        self.launch = launch
        self.schema = values.schema
        self.table = key_table()
        self.rules = [r for r in ruleset.rules if not r.versions or version_in_range(version, r.versions)]
        self.derives = list(ruleset.derives)
        self.rule_keys: list[set[str]] = []
        self.rule_value_keys: list[set[str]] = []
        keys: list[str] = []
        self.strings: dict[str, set[str]] = {}
        for rule in self.rules:
            mentioned = self._keys_of(rule.require) | (self._keys_of(rule.when) if rule.when else set())
            self.rule_keys.append(mentioned)
            self.rule_value_keys.append({k for node in (rule.require, rule.when) if node is not None
                                         for n in E.value_names(node) if (k := self.table.resolve(n))})
            lits: set[str] = set()
            for node in (rule.require, rule.when):
                if node is not None:
                    _string_literals(node, lits)
            for key in sorted(mentioned):
                if key not in keys:
                    keys.append(key)
                if self.table.types.get(key) == "str":
                    self.strings.setdefault(key, set()).update(lits)
        self.derive_deps: dict[str, set[str]] = {}
        for d in self.derives:
            deps = self._keys_of(d.value) | (self._keys_of(d.when) if d.when else set())
            self.derive_deps.setdefault(d.key, set()).update(deps)
            for key in (d.key, *sorted(deps)):
                if key not in keys:
                    keys.append(key)
        self.keys = keys
        for key in keys:
            if self.table.types.get(key) == "str":
                dom = self.strings.setdefault(key, set())
                s = values.settings.get(key)
                if s is not None and isinstance(s.value, str):
                    dom.add(s.value)
                if isinstance(self.default(key), str):
                    dom.add(self.default(key))
                dom.add("")  # stands for "any other string"
        self.autos = {k for k in keys if (s := values.settings.get(k)) is not None and s.state == "auto"}
        # False when zgen chose the world size (the smallest valid one): fixes then leave it alone.
        self.world_from_user = launch.world_size is not None
        self.prefer: dict = {}  # value HF Trainer would fill into an "auto" key, when zgen knows it
        self.unknown = {k for k in keys if (s := values.settings.get(k)) is not None and s.state == "invalid"}

    def _keys_of(self, node: E.Node) -> set[str]:
        return {k for n in E.names_in(node) if (k := self.table.resolve(n))}

    def default(self, key: str) -> object:
        spec = _schema_key(self.schema, key)
        return spec.default if isinstance(spec, Key) else None

    def cost(self, key: str) -> int:
        if key == "world_size":
            return _WORLD_COST
        spec = _schema_key(self.schema, key)
        # Removing or adding a whole section is a bigger edit than changing one value.
        return spec.fix_cost if isinstance(spec, Key) else 3

    def written(self, key: str) -> bool:
        if key in LAUNCH_FACTS:
            return getattr(self.launch, key) is not None
        return self.values.has(key)

    def depends_on_world(self, i: int) -> bool:
        seen, todo = set(), list(self.rule_value_keys[i])
        while todo:
            k = todo.pop()
            if k == "world_size":
                return True
            if k in seen:
                continue
            seen.add(k)
            todo.extend(self.derive_deps.get(k, ()))
        return False

    def affected(self, free: set[str]) -> set[str]:
        """`free` plus every key DeepSpeed derives from them (transitively)."""
        out = set(free)
        changed = True
        while changed:
            changed = False
            for key, deps in self.derive_deps.items():
                if key not in out and deps & out and not self.written(key):
                    out.add(key)
                    changed = True
        return out

    # -- the direct evaluation ----------------------------------------------
    def env(self, values: dict) -> Env:
        return Env(values, lambda name: self.written(self.table.resolve(name) or name), self.table.resolve,
                   lambda name: (self.table.resolve(name) or name) in self.autos)

    def base_values(self) -> dict:
        """Written values and defaults; None for `"auto"`, invalid, and keys DeepSpeed derives."""
        out: dict = {}
        for key in self.keys:
            if key in LAUNCH_FACTS:
                out[key] = getattr(self.launch, key)
                continue
            s = self.values.settings.get(key)
            if s is not None and s.state == "user" and s.value is not None and not isinstance(s.value, (list, dict)):
                out[key] = s.value
            elif s is not None and s.state != "user":
                out[key] = None
            else:
                out[key] = self.default(key)
        return out

    def derive(self, values: dict) -> dict:
        env = self.env(values)
        for d in self.derives:
            if self.written(d.key) or values.get(d.key) is not None:
                continue
            if d.when is None or compiled(d.when)(env) is True:
                values[d.key] = compiled(d.value)(env)
        return values

    def result(self, i: int, env: Env) -> bool | None:
        rule = self.rules[i]
        if rule.when is not None:
            cond = compiled(rule.when)(env)
            if cond is False:
                return True
            if cond is None:
                return None
        holds = compiled(rule.require)(env)
        return holds if isinstance(holds, bool) or holds is None else bool(holds)


# -- z3 ------------------------------------------------------------------------------------------------


def _literal(z3, value: object, t: str):
    if t == "int":
        return z3.IntVal(int(value))
    if t == "real":
        return z3.RealVal(repr(float(value)))
    if t == "bool":
        return z3.BoolVal(bool(value))
    return z3.StringVal(str(value))


def _py(z3, value) -> object:
    if z3.is_true(value):
        return True
    if z3.is_false(value):
        return False
    if z3.is_int_value(value):
        return value.as_long()
    if z3.is_rational_value(value):
        frac = Fraction(value.numerator_as_long(), value.denominator_as_long())
        return int(frac) if frac.denominator == 1 else float(frac)
    if z3.is_string_value(value):
        return value.as_string()
    return None


class _Sym:
    """z3 terms for a set of keys. Keys in `fixed` are constants; the rest are variables."""

    def __init__(self, ctx: _Context, fixed: dict | None = None, fixed_has: Callable[[str], bool] | None = None):
        import z3

        self.z3 = z3
        self.ctx = ctx
        self.fixed = fixed or {}
        self.fixed_has = fixed_has
        self.vars: dict = {}
        self.haves: dict = {}

    def resolve(self, name: str) -> str | None:
        return self.ctx.table.resolve(name)

    def type_of(self, key: str) -> str:
        return self.ctx.table.types.get(key, "key")

    def var(self, name: str):
        z3 = self.z3
        key = self.resolve(name) or name
        if key in self.fixed and self.fixed[key] is not None:
            return _literal(z3, self.fixed[key], self.type_of(key))
        if key not in self.vars:
            maker = {"int": z3.Int, "real": z3.Real, "bool": z3.Bool, "str": z3.String}.get(self.type_of(key), z3.Bool)
            self.vars[key] = maker(f"v:{key}")
        return self.vars[key]

    def has(self, name: str):
        key = self.resolve(name) or name
        if self.fixed_has is not None and key not in self.vars and key in self.fixed:
            return self.z3.BoolVal(self.fixed_has(key))
        if key not in self.haves:
            self.haves[key] = self.z3.Bool(f"has:{key}")
        return self.haves[key]

    def is_auto(self, name: str) -> bool:
        return (self.resolve(name) or name) in self.ctx.autos

    def domain(self, name: str) -> list[str]:
        return sorted(self.ctx.strings.get(self.resolve(name) or name, set()))

    # -- shared constraints ---------------------------------------------------
    def key_constraints(self, key: str) -> list:
        """Domain, default-when-absent and section presence of one variable key."""
        z3, ctx = self.z3, self.ctx
        out = []
        if key in LAUNCH_FACTS:
            var = self.var(key)
            out.append(var >= 1)
            if key == "world_size":
                out.append(var <= WORLD_SIZE_BOUND)
            return out
        t = self.type_of(key)
        has = self.has(key)
        parent = key.rpartition(".")[0]
        if parent and parent not in ("optimizer", "scheduler", "optimizer.params", "scheduler.params"):
            out.append(z3.Implies(has, self.has(parent)))
        if t == "key":
            return out
        var = self.var(key)
        spec = _schema_key(ctx.schema, key)
        if isinstance(spec, Key) and t in ("int", "real"):
            for bound, make in ((spec.ge, lambda v, b: v >= b), (spec.gt, lambda v, b: v > b),
                                (spec.le, lambda v, b: v <= b)):
                if bound is not None:
                    out.append(make(var, _literal(z3, bound, t)))
            if spec.choices:
                out.append(z3.Or([var == _literal(z3, c, t) for c in spec.choices]))
        if t == "str":
            out.append(z3.Or([var == z3.StringVal(v) for v in self.domain(key)]))
        default = ctx.default(key)
        if default is not None:
            out.append(z3.Implies(z3.Not(has), var == _literal(z3, default, t)))
        return out

    def derive_constraints(self, only: set[str] | None = None) -> list:
        from zgen.solver.compile import to_z3

        z3 = self.z3
        out = []
        for d in self.ctx.derives:
            if only is not None and d.key not in only:
                continue
            cond = z3.Not(self.has(d.key))
            if d.when is not None:
                cond = z3.And(cond, to_z3(d.when, self))
            out.append(z3.Implies(cond, self.var(d.key) == to_z3(d.value, self)))
        return out

    def rule_term(self, rule: Rule):
        from zgen.solver.compile import to_z3

        body = to_z3(rule.require, self)
        if rule.when is not None:
            body = self.z3.Implies(to_z3(rule.when, self), body)
        return body

    def model_values(self, model) -> dict:
        return {k: _py(self.z3, model.eval(v, model_completion=True)) for k, v in self.vars.items()}


class _Tracked:
    """The assumption-based solver: one tracked literal per key, one guard literal per rule."""

    def __init__(self, ctx: _Context, rule_indices: list[int]) -> None:
        self.ctx = ctx
        self.sym = sym = _Sym(ctx)
        z3 = sym.z3
        self.z3 = z3
        self.solver = s = z3.Solver()
        s.set("core.minimize", True)
        s.set("rlimit", _RLIMIT)
        self.last_sat = False
        self.rule_lit: dict[int, object] = {}
        for i in rule_indices:
            lit = z3.Bool(f"rule:{i}:{ctx.rules[i].code}")
            s.add(z3.Implies(lit, sym.rule_term(ctx.rules[i])))
            self.rule_lit[i] = lit
        s.add(sym.derive_constraints())
        self.assumptions: dict[str, object] = {}
        done: set[str] = set()
        todo = list(sym.vars) + list(sym.haves)
        while todo:
            key = todo.pop(0)
            if key in done:
                continue
            done.add(key)
            s.add(sym.key_constraints(key))
            self._assume(key)
            todo.extend(k for k in [*sym.vars, *sym.haves] if k not in done)

    def _assume(self, key: str) -> None:
        z3, sym, ctx = self.z3, self.sym, self.ctx
        if key in LAUNCH_FACTS:
            given = getattr(ctx.launch, key)
            if given is None:
                self.solver.add(z3.Not(sym.has(key)))
                return
            lit = z3.Bool(f"fact:{key}")
            self.solver.add(z3.Implies(lit, z3.And(sym.has(key), sym.var(key) == given)))
            self.assumptions[key] = lit
            return
        lit = z3.Bool(f"lit:{key}")
        setting = ctx.values.settings.get(key)
        t = sym.type_of(key)
        if setting is not None and setting.state == "user" and setting.value is not None and t != "key" \
                and not isinstance(setting.value, (list, dict)):
            self.solver.add(z3.Implies(lit, z3.And(sym.has(key), sym.var(key) == _literal(z3, setting.value, t))))
        elif ctx.written(key):
            self.solver.add(z3.Implies(lit, sym.has(key)))
        else:
            self.solver.add(z3.Implies(lit, z3.Not(sym.has(key))))
        self.assumptions[key] = lit

    def lits(self) -> list:
        return list(self.assumptions.values())

    def check(self, extra: list) -> bool | None:
        """True (sat), False (unsat) or None (gave up within the effort limit)."""
        r = self.solver.check(self.lits() + extra)
        self.last_sat = r == self.z3.sat
        return True if r == self.z3.sat else False if r == self.z3.unsat else None

    def core_keys(self, rule: Rule | None) -> tuple[str, ...]:
        names = {str(c) for c in self.solver.unsat_core()}
        keys = [k for k, lit in self.assumptions.items() if str(lit) in names]
        order = list(rule.keys) if rule else []

        def rank(k: str) -> tuple[int, int, str]:
            return (order.index(k) if k in order else len(order), 0 if self.ctx.written(k) else 1, k)

        keys.sort(key=rank)
        if rule and rule.anchor in keys:
            keys.remove(rule.anchor)
            keys.insert(0, rule.anchor)
        return tuple(keys)


def _fix(ctx: _Context, rule_index: int, core: tuple[str, ...], keep: list[int], values: dict) -> tuple[Change, ...]:
    """The cheapest edit of the core's keys that makes the rule and the kept rules hold (see module doc)."""
    changeable = [k for k in core if k not in LAUNCH_FACTS or (k == "world_size" and ctx.world_from_user)]
    options: list[tuple[int, tuple[str, ...]]] = [(ctx.cost(k), (k,)) for k in changeable]
    if len(changeable) <= 5:
        options += [(ctx.cost(a) + ctx.cost(b), (a, b)) for a, b in combinations(changeable, 2)]
    options.sort(key=lambda o: (o[0], len(o[1]), [changeable.index(k) for k in o[1]]))
    for _, free in options:
        for keep_written in (True, False):
            if not keep_written and not any(ctx.written(k) and k not in LAUNCH_FACTS for k in free):
                continue
            changes = _try_fix(ctx, rule_index, set(free), keep, values, keep_written)
            if changes:
                return changes
    return ()


def _try_fix(ctx: _Context, rule_index: int, free: set[str], keep: list[int], values: dict,
             keep_written: bool) -> tuple[Change, ...] | None:
    # Without a given world size the fix must work at some world size, not at the one used for messages.
    affected = ctx.affected(free | ({"world_size"} if ctx.launch.world_size is None else set()))
    fixed = {k: v for k, v in values.items() if k not in affected}
    sym = _Sym(ctx, fixed, ctx.written)
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
    opt.set("rlimit", _RLIMIT)
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


# -- messages --------------------------------------------------------------------------------------------


def _format(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    if value is None:
        return "?"
    return str(value)


def _render(template, env: Env, fix_text: str, autos: set[str] = frozenset()) -> str:
    """Fill a message template. An `"auto"` key shows as "auto", and a computation involving one as `?`."""
    out = []
    for part in template.parts:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, E.Name) and part.name == "$fix":
            out.append(fix_text or "change one of the keys involved")
        elif isinstance(part, E.Name) and (env.resolve(part.name) or part.name) in autos:
            out.append('"auto"')
        elif any((env.resolve(n) or n) in autos for n in E.names_in(part)):
            out.append("?")
        else:
            out.append(_format(compiled(part)(env)))
    return "".join(out)


def _fix_text(changes: tuple[Change, ...]) -> str:
    words = []
    for c in changes:
        if c.action == "remove":
            words.append(f"remove `{c.key}`")
        elif c.action == "world":
            words.append(f"run with world size {_format(c.value)}")
        else:
            value = f'"{c.value}"' if isinstance(c.value, str) else _format(c.value)
            words.append(f"set `{c.key}` to {value}")
    return " and ".join(words)


# -- the whole check --------------------------------------------------------------------------------------


def solve(ruleset: RuleSet, values: ConfigValues, launch: LaunchValues, version: Version,
          extra_valid: Callable[[int, dict], bool] | None = None, prefer: dict | None = None) -> Outcome:
    """Check every rule; see the module docstring. `extra_valid(w, values)` adds a check per world size.

    Without a world size, the valid sizes up to the bound are listed and the
    rest of the check runs at the smallest of them; when there is none, the
    findings say which rules or keys rule out every size.
    """
    ctx = _Context(ruleset, values, launch, version)
    ctx.prefer = prefer or {}
    errors = [i for i, r in enumerate(ctx.rules) if r.severity == Severity.ERROR]
    base = ctx.base_values()
    if launch.world_size is not None:
        return _check_at(ctx, base, errors)
    sizes, ever = _sweep(ctx, base, errors, extra_valid)
    if sizes:
        ctx.launch = replace(launch, world_size=sizes[0])
        return replace(_check_at(ctx, base, errors), valid_world_sizes=sizes)
    return _nowhere(ctx, base, errors, ever)


def _check_at(ctx: _Context, base: dict, errors: list[int]) -> Outcome:
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
    t = _Tracked(ctx, involved)
    violated = [i for i in undecided if t.check([t.rule_lit[i]]) is False]
    errors_holding = [i for i in errors if i not in violated]
    holding_lits = [t.rule_lit[i] for i in involved if i not in violated]
    if t.check(holding_lits) is not True:
        t.check([])
    model_values = t.sym.model_values(t.solver.model()) if t.last_sat else {}
    shown = dict(now)
    shown.update({k: v for k, v in model_values.items() if now.get(k) is None})
    violations = [_violation(ctx, t, i, errors_holding, shown, every=False) for i in violated]
    conflict = None
    error_lits = [t.rule_lit[i] for i in errors_holding if i in t.rule_lit]
    if t.check(error_lits) is False:
        conflict = t.core_keys(None)
    resolved, forced = dict(now), set()
    if conflict is None and ctx.autos:
        solved, forced = _resolve_autos(t, error_lits)
        resolved.update({k: v for k, v in solved.items() if resolved.get(k) is None or k in ctx.autos})
    return Outcome(tuple(violations), conflict, resolved, frozenset(forced), None, world,
                   _explain_derived(ctx, resolved))


def _nowhere(ctx: _Context, base: dict, errors: list[int], ever: list) -> Outcome:
    """No world size up to the bound works: report the rules that fail at every size, or the keys that clash."""
    now = ctx.derive(dict(base, world_size=1))
    env = ctx.env(now)
    failing = [i for i in range(len(ctx.rules))
               if (ever[i] is False if ctx.depends_on_world(i) else ctx.result(i, env) is False)]
    t = _Tracked(ctx, sorted(set(failing) | set(errors)))
    violated = [i for i in failing if t.check([t.rule_lit[i]]) is False]
    errors_holding = [i for i in errors if i not in violated]
    violations = [_violation(ctx, t, i, errors_holding, now, every=ctx.depends_on_world(i)) for i in violated]
    conflict = None
    if not any(ctx.rules[i].severity == Severity.ERROR for i in violated):
        if t.check([t.rule_lit[i] for i in errors]) is False:
            conflict = t.core_keys(None)
    return Outcome(tuple(violations), conflict, now, frozenset(), (), None, _explain_derived(ctx, now))


def _violation(ctx: _Context, t: _Tracked, i: int, keep: list[int], shown: dict, every: bool) -> Violation:
    rule = ctx.rules[i]
    t.check([t.rule_lit[i]])
    core = t.core_keys(rule)
    fix = _fix(ctx, i, core, keep, shown)
    env = ctx.env(shown)
    message = _render(rule.message, env, "", ctx.autos)
    if every:
        message += f" (and at every other world size up to {WORLD_SIZE_BOUND})"
    fix_text = _fix_text(fix)
    help_text = _render(rule.help, env, fix_text, ctx.autos) if rule.help else fix_text
    return Violation(rule, core, shown, message, help_text or None, fix, every)


def _sweep(ctx: _Context, base: dict, errors: list[int], extra_valid) -> tuple[tuple[int, ...], list]:
    """Valid world sizes up to the bound, and for each rule whether it holds at some size (None: unknown)."""
    n = len(ctx.rules)
    varying = [i for i in range(n) if ctx.depends_on_world(i)]
    varying_errors = [i for i in varying if i in errors]
    # Rules that do not involve the world size are reported as findings; they do not decide the sizes.
    fixed_status = True
    launch = ctx.launch
    ctx.launch = replace(launch, world_size=1)  # each size in the sweep counts as given
    tracked: list[_Tracked] = []
    ever: list = [False] * n
    sizes = []
    for w in range(1, WORLD_SIZE_BOUND + 1):
        values = ctx.derive(dict(base, world_size=w))
        env = ctx.env(values)
        status = fixed_status
        for i in varying:
            r = ctx.result(i, env)
            if r is True:
                ever[i] = True
            elif r is None and ever[i] is False:
                ever[i] = None
            if r is None and ctx.rule_keys[i] & ctx.unknown:
                r = True  # an invalid value is reported already; it does not decide the world size
            if i in varying_errors and r is not True and status is not False:
                status = False if r is False else None
        if status is None and ctx.autos:
            status, witness = _auto_witness(ctx, base, w, varying_errors)
            if status:
                values = witness
        if status is None:
            if not tracked:
                ctx.launch = launch
                tracked.append(_Tracked(ctx, varying_errors))
                ctx.launch = replace(launch, world_size=1)
            t = tracked[0]
            status = t.check([t.rule_lit[i] for i in varying_errors] + [t.sym.var("world_size") == w]) is True
            if status:
                values = t.sym.model_values(t.solver.model())
        if status and extra_valid is not None:
            status = extra_valid(w, values)
        if status:
            sizes.append(w)
    ctx.launch = launch
    return tuple(sizes), ever


# HF Trainer fills these from its arguments; for them "is there a fill that works" is decided exactly by
# DeepSpeed's own derivation: the batch equation TBS = MBS x GAS x W has a positive integer solution for the
# "auto" keys iff deriving them by floor division (as if they were absent) satisfies it.
_BATCH_KEYS = {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"}


def _auto_witness(ctx: _Context, base: dict, world: int, rules: list[int]) -> tuple[bool | None, dict]:
    """Try filling the `"auto"` keys the way HF Trainer can; (True, values) when that satisfies `rules`.

    Returns (False, {}) when only batch keys are `"auto"` and no fill works, (None, {}) when z3 must decide.
    """
    def attempt(hf_first: bool) -> dict:
        values = dict(base, world_size=world)
        for key in ctx.autos:
            values[key] = None

        def written(name: str) -> bool:
            key = ctx.table.resolve(name) or name
            return values.get(key) is not None if key in ctx.autos else ctx.written(key)

        def derive() -> None:
            env = Env(values, written, ctx.table.resolve)
            for d in ctx.derives:
                if values.get(d.key) is None and not written(d.key) and (d.when is None or compiled(d.when)(env) is True):
                    values[d.key] = compiled(d.value)(env)

        def hf_fill() -> None:
            for key in sorted(ctx.autos - {"train_batch_size"}):
                spec = _schema_key(ctx.schema, key)
                if values.get(key) is None and isinstance(spec, Key):
                    values[key] = spec.hf_default if spec.hf_default is not None else spec.default

        if hf_first:
            hf_fill()
        derive()
        hf_fill()
        derive()
        return values

    for hf_first in (False, True):
        values = attempt(hf_first)
        env = ctx.env(values)
        if all(ctx.result(i, env) is True for i in rules):
            return True, values
    reached = set().union(*(ctx.rule_keys[i] for i in rules)) if rules else set()
    if ctx.autos & ctx.affected(reached) <= _BATCH_KEYS or (ctx.autos & reached) <= _BATCH_KEYS:
        return False, {}
    return None, {}


def _resolve_autos(t: _Tracked, assumptions: list) -> tuple[dict, set[str]]:
    """A model of the config in which each `"auto"` key prefers the value HF Trainer uses by default."""
    z3, ctx, sym = t.z3, t.ctx, t.sym
    opt = z3.Optimize()
    opt.add(t.solver.assertions())
    opt.add(t.lits() + assumptions)
    autos = sorted(k for k in ctx.autos if k in sym.vars)
    for key in autos:
        spec = _schema_key(ctx.schema, key)
        want = ctx.prefer.get(key, getattr(spec, "hf_default", None))
        if want is None:
            want = ctx.default(key)
        if want is not None:
            opt.add_soft(sym.var(key) == _literal(z3, want, sym.type_of(key)), 1)
    opt.set("rlimit", _RLIMIT)
    if opt.check() != z3.sat:
        if t.check(assumptions) is not True:
            return {}, set()
        return sym.model_values(t.solver.model()), set()
    values = sym.model_values(opt.model())
    forced = set()
    for key in autos:
        if values.get(key) is None:
            continue
        if t.check(assumptions + [sym.var(key) != _literal(z3, values[key], sym.type_of(key))]) is False:
            forced.add(key)
    return values, forced


def _explain_derived(ctx: _Context, values: dict) -> dict[str, str]:
    env = ctx.env(values)
    out: dict[str, str] = {}
    for d in ctx.derives:
        if d.key in out or ctx.written(d.key):
            continue
        if d.when is not None and compiled(d.when)(env) is not True:
            continue
        numbers = E.unparse(d.value, lambda n: _format(values.get(ctx.table.resolve(n) or n)))
        out[d.key] = d.explain if numbers == _format(values.get(d.key)) else f"{d.explain} = {numbers}"
    return out
