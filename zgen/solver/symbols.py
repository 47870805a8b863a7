"""z3 terms for a check: variables and presence flags per key, tracked assumptions, unsat cores.

`Symbols` turns keys into z3 variables (or constants, for keys a fix holds
fixed) and rules into terms. `Tracked` is the assumption-based solver: one
literal per written or absent key, one per rule, so that an unsat core names
the keys that conflict. z3 is imported when the first `Symbols` is built.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Callable

from zgen.config.schema import Key
from zgen.solver.context import RLIMIT, WORLD_SIZE_BOUND, Context, schema_key
from zgen.solver.rules import LAUNCH_FACTS, Rule

__all__ = ["Symbols", "Tracked", "literal", "fresh_context", "RLIMIT"]


def fresh_context() -> None:
    """Make the next z3 terms in a new context, so that a check's time and answer depend on its config alone.

    z3's search follows the order of every term its context ever made. In a long-lived process (the test
    suite, an editor plugin) the same config took from 0.01 s to 4 s depending on the checks before it, and
    once ran for minutes past its `rlimit`; a `zgen check` process, which starts with an empty context,
    always took the same time. Every z3 call here uses z3's default context, so a new default is enough.
    """
    import z3

    z3.z3._main_ctx = None  # z3.main_ctx() makes a new one on its next call


def literal(z3, value: object, t: str):
    """A z3 constant of type `t` (int, real, bool, str)."""
    if t == "int":
        return z3.IntVal(int(value))
    if t == "real":
        return z3.RealVal(repr(float(value)))
    if t == "bool":
        return z3.BoolVal(bool(value))
    return z3.StringVal(str(value))


def to_python(z3, value) -> object:
    """A z3 model value as a Python value."""
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


class Symbols:
    """z3 terms for a set of keys. Keys in `fixed` are constants; the rest are variables."""

    def __init__(self, ctx: Context, fixed: dict | None = None, fixed_has: Callable[[str], bool] | None = None):
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
            return literal(z3, self.fixed[key], self.type_of(key))
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
        spec = schema_key(ctx.schema, key)
        if isinstance(spec, Key) and t in ("int", "real"):
            for bound, make in ((spec.ge, lambda v, b: v >= b), (spec.gt, lambda v, b: v > b),
                                (spec.le, lambda v, b: v <= b)):
                if bound is not None:
                    out.append(make(var, literal(z3, bound, t)))
            if spec.choices:
                out.append(z3.Or([var == literal(z3, c, t) for c in spec.choices]))
        if t == "str":
            out.append(z3.Or([var == z3.StringVal(v) for v in self.domain(key)]))
        default = ctx.default(key)
        if default is not None:
            out.append(z3.Implies(z3.Not(has), var == literal(z3, default, t)))
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
        return {k: to_python(self.z3, model.eval(v, model_completion=True)) for k, v in self.vars.items()}


class Tracked:
    """The assumption-based solver: one tracked literal per key, one guard literal per rule."""

    def __init__(self, ctx: Context, rule_indices: list[int]) -> None:
        self.ctx = ctx
        self.sym = sym = Symbols(ctx)
        z3 = sym.z3
        self.z3 = z3
        self.solver = s = z3.Solver()
        s.set("core.minimize", True)
        s.set("rlimit", RLIMIT)
        self.last_sat = False
        self.last_core: set[str] = set()
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
            self.solver.add(z3.Implies(lit, z3.And(sym.has(key), sym.var(key) == literal(z3, setting.value, t))))
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
        # Read the core once: z3 does not promise it again after other calls on the solver.
        self.last_core = {str(c) for c in self.solver.unsat_core()} if r == self.z3.unsat else set()
        return True if r == self.z3.sat else False if r == self.z3.unsat else None

    def core_rules(self) -> list[int]:
        """The rules in the last unsat core."""
        return [i for i, lit in self.rule_lit.items() if str(lit) in self.last_core]

    def core_keys(self, rule: Rule | None) -> tuple[str, ...]:
        """The keys in the last unsat core, the rule's anchor first; with no rule given, the keys of the
        rules in the core that are `"auto"` are added (they conflict through the rules alone)."""
        keys = [k for k, lit in self.assumptions.items() if str(lit) in self.last_core]
        if rule is None:
            for i in self.core_rules():
                keys += [k for k in sorted(self.ctx.rule_keys[i] & self.ctx.autos) if k not in keys]
        order = list(rule.keys) if rule else []

        def rank(k: str) -> tuple[int, int, str]:
            return (order.index(k) if k in order else len(order), 0 if self.ctx.written(k) else 1, k)

        keys.sort(key=rank)
        if rule and rule.anchor in keys:
            keys.remove(rule.anchor)
            keys.insert(0, rule.anchor)
        return tuple(keys)
