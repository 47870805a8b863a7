"""Which world sizes make a config valid, when none is given.

Every size from 1 to `WORLD_SIZE_BOUND` is tried. Rules that do not involve
the world size are left to the findings; the others are evaluated directly
(fast), `"auto"` batch keys are filled the way HF Trainer can fill them, and
z3 decides what remains. A caller's `extra_valid(w, values)` (the memory
check) can veto a size.
"""

from __future__ import annotations

from dataclasses import replace

from zgen.config.schema import Key
from zgen.solver.context import BATCH_KEYS, WORLD_SIZE_BOUND, Context, schema_key
from zgen.solver.evaluate import Env, compiled
from zgen.solver.symbols import Tracked

__all__ = ["valid_world_sizes"]


def valid_world_sizes(ctx: Context, base: dict, errors: list[int], extra_valid) -> tuple[tuple[int, ...], list]:
    """Valid world sizes up to the bound, and for each rule whether it holds at some size (None: unknown)."""
    n = len(ctx.rules)
    varying = [i for i in range(n) if ctx.depends_on_world(i)]
    varying_errors = [i for i in varying if i in errors]
    # Rules that do not involve the world size are reported as findings; they do not decide the sizes.
    fixed_status = True
    launch = ctx.launch
    ctx.launch = replace(launch, world_size=1)  # each size in the sweep counts as given
    tracked: list[Tracked] = []
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
                tracked.append(Tracked(ctx, varying_errors))
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


# For the batch keys HF Trainer fills, "is there a fill that works" is decided exactly by DeepSpeed's own
# derivation: TBS = MBS x GAS x W has a positive integer solution for the "auto" keys iff deriving them by
# floor division (as if they were absent) satisfies it.
def _auto_witness(ctx: Context, base: dict, world: int, rules: list[int]) -> tuple[bool | None, dict]:
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
                spec = schema_key(ctx.schema, key)
                if values.get(key) is None and isinstance(spec, Key):
                    assumed = ctx.values.settings[key].assumed
                    values[key] = assumed if assumed is not None else spec.default

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
    if ctx.autos & ctx.affected(reached) <= BATCH_KEYS or (ctx.autos & reached) <= BATCH_KEYS:
        return False, {}
    return None, {}
