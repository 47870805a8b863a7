"""What one check knows before any solving: active rules, keys, defaults, written values, direct evaluation.

`Context` gathers the rules that apply to the chosen DeepSpeed release, every
key they mention (with the keys DeepSpeed derives from others), the written
values and defaults, and evaluates rules on concrete values with
`zgen.solver.evaluate`. Everything z3 does starts from it.
"""

from __future__ import annotations

from zgen.config.schema import Key, Section, Version
from zgen.config.validate import ConfigValues
from zgen.solver import expr as E
from zgen.solver.evaluate import Env, compiled
from zgen.solver.rules import LAUNCH_FACTS, RuleSet, key_table, version_in_range

__all__ = ["Context", "schema_key", "WORLD_SIZE_BOUND", "BATCH_KEYS"]

# Largest world size listed when none is given.
WORLD_SIZE_BOUND = 1024
# Cost of asking for a different world size in a fix (config edits cost 1-3).
WORLD_COST = 4
# Deterministic effort limit for one optimisation (z3 resource units, not seconds, so output never varies).
RLIMIT = 4_000_000
# The keys HF Trainer fills from its arguments when they are "auto".
BATCH_KEYS = {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"}


def schema_key(schema: Section, key: str) -> Key | Section | None:
    """The schema entry of a canonical dotted key, or None."""
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


class Context:
    """What every stage needs: active rules, derivations, keys with their types, defaults and written values."""

    def __init__(self, ruleset: RuleSet, values: ConfigValues, launch, version: Version) -> None:
        self.values = values
        self.launch = launch
        self._has: dict[str, bool] = {}
        self.schema = values.schema
        self.table = key_table()
        self.rules = [r for r in ruleset.rules if (not r.versions or version_in_range(version, r.versions))
                      and (not r.consumers or values.consumer in r.consumers)]
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
        """DeepSpeed's default for `key` in this release (None: derived or none)."""
        spec = schema_key(self.schema, key)
        return spec.default if isinstance(spec, Key) else None

    def cost(self, key: str) -> int:
        """How much a fix that changes `key` costs (see `zgen.solver.fix`)."""
        if key == "world_size":
            return WORLD_COST
        spec = schema_key(self.schema, key)
        # Removing or adding a whole section is a bigger edit than changing one value.
        return spec.fix_cost if isinstance(spec, Key) else 3

    def written(self, key: str) -> bool:
        """Whether the key is written (or the launch fact given)."""
        if key in LAUNCH_FACTS:
            return getattr(self.launch, key) is not None
        # The written values never change while a config is solved; the world-size sweep asks often.
        hit = self._has.get(key)
        if hit is None:
            hit = self._has[key] = self.values.has(key)
        return hit

    def depends_on_world(self, i: int) -> bool:
        """Whether rule `i` uses the world size, directly or through a derived key."""
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
        """An evaluation environment over `values` with this config's presence and autos."""
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
        """Fill the keys DeepSpeed derives (in `[[derive]]` order) into `values`."""
        env = self.env(values)
        for d in self.derives:
            if self.written(d.key) or values.get(d.key) is not None:
                continue
            if d.when is None or compiled(d.when)(env) is True:
                values[d.key] = compiled(d.value)(env)
        return values

    def result(self, i: int, env: Env) -> bool | None:
        """Rule `i` evaluated directly: True, False, or None when it cannot tell."""
        rule = self.rules[i]
        if rule.when is not None:
            cond = compiled(rule.when)(env)
            if cond is False:
                return True
            if cond is None:
                return None
        holds = compiled(rule.require)(env)
        return holds if isinstance(holds, bool) or holds is None else bool(holds)
