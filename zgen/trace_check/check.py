"""`zgen check --trace`: run the model as simulated ZeRO-3 ranks and report what would hang or train wrong.

The runs, in order (each builds a fresh model, see `runs`):

1. the *full* run as rank 0: the build under the simulated `zero.Init`, then
   the step and the entries, every use of a partitioned parameter checked
   (ZG1xx, ZG3xx). Its failure is the user's error (exit 2);
2. the reference run, the same again: whatever differs between 1 and 2
   (a first-call cache, a global counter) is not a rank's doing, and a later
   divergence at that statement is not reported;
3. one run per factor that differs between ranks, each varied alone: other
   ranks (`ranks.simulated_ranks`), other data (and, when the inputs function
   makes micro batches of several structures, one of another structure),
   another random state. The
   first call where one parts from the reference is ZG201 (rank), ZG202
   (random) or ZG203/204/205 (data, by the statement, `divergence.data_code`),
   at the statement that decided it. These runs are checked for ZG1xx/ZG3xx too;
4. one run per decision on values that could differ between ranks (its input
   came from the data or a random draw and not through a collective, or its
   value differed between the runs above), with that decision answered the
   other way (`decisions.Force`), or, when it depends on known random draws
   only, two runs with those draws at the low and the high end of what they
   can be (`decisions.ForceDraws`; a decision its draws cannot turn is never
   turned). If the modules that run change, the decision is a hazard even
   though the ranks above happened to agree (the experts every rank happened
   to route to, the coin every rank happened to win): reported at the
   statement where the runs part. A decision whose answer changes nothing that
   gathers (inside a module without submodules that hold parameters, branches
   that call the same modules, a logging line) is not.

Each hazard becomes a `Finding` with the rule's code and severity from the
registry, at the statement as `zgen check` prints it.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from zgen.findings import Finding, Source
from zgen.plan.trace import Target, load_callable

from .decisions import Decision, Force, ForceDraws, draws_of, variants
from .divergence import Parting, data_code, first_divergence
from .events import calls_of
from .hazards import Hazard, Hazards
from .partitions import Partitions
from .ranks import Collectives, preserved_random_state, simulated_ranks
from .runs import Factors, Program, RunRecord, raise_failure, run
from .sites import site_of

__all__ = ["TraceRequest", "TraceResult", "trace_check", "MAX_FORCED", "FORCED_SECONDS"]

# Data seeds tried for a micro batch of another structure (calling the inputs function only).
STRUCTURE_SEEDS = 16
STRUCTURE_SECONDS = 5.0
# Decisions answered the other way, at most, and the time they may take; the first ones are the likeliest.
MAX_FORCED = 24
FORCED_SECONDS = 60.0


@dataclass(frozen=True)
class TraceRequest:
    """What `zgen check --trace` runs: the user's functions (resolved targets) and the job's shape."""

    model: Target
    root: Path
    inputs: Target | None = None
    loss: Target | None = None
    entries: tuple[Target, ...] = ()
    world_size: int = 2
    seq_len: int = 16
    batch_size: int = 1
    gpus_per_node: int | None = None
    persistence_threshold: int = 100_000
    real: bool | None = None  # real CPU tensors or `meta`; None: by the model's size (`runs.REAL_PARAM_BYTES`)


@dataclass(frozen=True)
class TraceResult:
    """The trace's findings, and notes on how it ran (printed as warnings by the CLI)."""

    findings: tuple[Finding, ...]
    notes: tuple[str, ...] = ()
    real: bool = True  # ran on real CPU tensors (else meta)


def trace_check(request: TraceRequest) -> TraceResult:
    """Run the checks of the module docstring; a factory, inputs or entry that raises is a `ZgenError`."""
    from zgen.registry import all_rules

    with preserved_random_state(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the user's code warns once per run; the report says what matters
        program = _program(request)
        collectives = Collectives()
        hazards = Hazards(Partitions(program.persistence_threshold), phase=lambda: "build")
        full = run(program, Factors(0, 0, 0), collectives, hazards=hazards, watch_build=True, lines=False)
        if full.error is not None and not program.real and isinstance(full.error, (RuntimeError, NotImplementedError)):
            # A meta kernel stricter than the CPU's, or `torch.autocast` on a meta device: fake tensors run it.
            program = dataclasses.replace(program, fake=True)
            collectives, hazards = Collectives(), Hazards(Partitions(program.persistence_threshold), phase=lambda: "build")
            full = run(program, Factors(0, 0, 0), collectives, hazards=hazards, watch_build=True, lines=False)
        raise_failure(full, program)
        runs = _Runs(program, collectives, hazards)
        reference = runs.run(Factors(0, 0, 0))
        notes = []
        unsteady = first_divergence(full.phases, reference.phases, reference.error is None)
        if unsteady is not None:
            notes.append(f"the second run of rank 0 called `{unsteady.theirs}` where the first called "
                         f"`{unsteady.ours}`: state kept between runs (a cache, a counter); divergences there are "
                         "not reported")
            reference, unsteady = runs.unsteady(unsteady)
        records = []
        for factors in _variants(program):
            rec = runs.run(factors)
            records.append(rec)
            parting = runs.parting(reference, rec, lambda f=factors: runs.run(f, lines=True))
            if parting is not None and not _same(parting, unsteady):
                _divergence(hazards, parting, _factor(factors))
        _forced_decisions(runs, reference, records, unsteady, notes)
    rules = all_rules()
    findings = tuple(_finding(h, rules) for h in hazards.found.values())
    return TraceResult(findings, tuple(notes), program.real)


class _Runs:
    """The runs of one check after the full one. Line tracing costs ten times the run, so runs go without it,
    and a run whose calls part from the reference's is run again with it (with the reference, once), to find
    the statement that decided: the runs are seeded, so the second comes out as the first."""

    def __init__(self, program: Program, collectives: Collectives, hazards: Hazards) -> None:
        self.program = program
        self.collectives = collectives
        self.hazards = hazards
        self.always = False  # every run traced (state kept between runs: a second run may not repeat the first)
        self._lined: RunRecord | None = None

    def run(self, factors: Factors, *, lines: bool = False, checked: bool = True, **kwargs) -> RunRecord:
        return run(self.program, factors, self.collectives, hazards=self.hazards if checked else None,
                   backward=self.program.real, lines=lines or self.always, **kwargs)

    def parting(self, reference: RunRecord, rec: RunRecord, again) -> Parting | None:
        """Where `rec` parts from the reference, with the deciding statement (`again()`: `rec` traced)."""
        parting = first_divergence(reference.phases, rec.phases, rec.error is None)
        if parting is None or parting.site is not None:
            return parting
        if self._lined is None:
            self._lined = self.run(Factors(0, 0, 0), lines=True)
        traced = again()
        lined = first_divergence(self._lined.phases, traced.phases, traced.error is None)
        return lined if lined is not None else parting

    def unsteady(self, calls_only: Parting) -> tuple[RunRecord, Parting]:
        """Runs that do not repeat themselves: trace every run from here, and find where two traced ones part
        (the statement whose later divergences are not reported). Returns the reference and that parting."""
        self.always = True
        first = self.run(Factors(0, 0, 0))
        reference = self.run(Factors(0, 0, 0))
        again = first_divergence(first.phases, reference.phases, reference.error is None)
        self._lined = reference
        return reference, again if again is not None else calls_only


def _program(request: TraceRequest) -> Program:
    root = request.root
    factory = load_callable(request.model, root)
    inputs = (load_callable(request.inputs, root), request.inputs) if request.inputs else None
    loss = (load_callable(request.loss, root), request.loss) if request.loss else None
    entries = tuple((load_callable(t, root), t) for t in request.entries)
    real = _fits(factory, request) if request.real is None else request.real
    return Program(factory=factory, factory_target=request.model, inputs=inputs, loss=loss, entries=entries,
                   batch_size=request.batch_size, seq_len=request.seq_len, world_size=max(request.world_size, 2),
                   gpus_per_node=request.gpus_per_node, persistence_threshold=request.persistence_threshold,
                   real=real)


def _fits(factory, request: TraceRequest) -> bool:
    """Whether the model runs on real CPU tensors: small parameters and a small batch (`runs.REAL_PARAM_BYTES`)."""
    from .runs import REAL_PARAM_BYTES, REAL_TOKENS

    if request.batch_size * request.seq_len > REAL_TOKENS:
        return False
    model = _probe(factory, request.model)
    size = sum(p.numel() * 4 for p in model.parameters())
    return size <= REAL_PARAM_BYTES


def _variants(program: Program) -> list[Factors]:
    """The runs that vary one factor each. On `meta` tensors there are no values to vary, and each run costs
    seconds: the last rank (a decision on the rank compares with 0 or the last) and another random state.
    Either way, when the inputs function gives micro batches of another structure for other seeds (a key only
    some batches carry, an optional input that is sometimes None), one run gets such a batch: a forward that
    picks towers by the keys it is given runs other modules on a rank that got another kind of batch."""
    other = _other_structure(program)
    extra = [Factors(0, other, 0)] if other is not None else []
    if not program.real:
        return [Factors(program.world_size - 1, 0, 0), Factors(0, 0, 1)] + extra
    data = [Factors(0, 1, 0)] + [f for f in extra if f.data != 1]
    return [Factors(r, 0, 0) for r in simulated_ranks(program.world_size)[1:]] + data + [Factors(0, 0, 1)]


def _other_structure(program: Program) -> int | None:
    """The first data seed (of `STRUCTURE_SEEDS`) whose micro batch differs in structure from seed 0's."""
    from .runs import batch_structure

    started = time.monotonic()
    reference = batch_structure(program, 0)
    if reference is None:
        return None
    for data in range(1, STRUCTURE_SEEDS + 1):
        if batch_structure(program, data) != reference:
            return data
        if time.monotonic() - started > STRUCTURE_SECONDS:
            break  # an inputs function that is slow to call (it reads files, builds a tokenizer)
    return None


def _probe(factory, target: Target):
    """The model built on `meta`, to count its parameters; a factory that raises is the user's error."""
    from .runs import checked_module, factory_failed, meta_build

    try:
        model = meta_build(factory)
    except Exception as e:
        raise factory_failed(target, e) from None
    return checked_module(target, model)


def _factor(factors: Factors) -> str:
    if factors.rank:
        return "rank"
    return "data" if factors.data else "random"


def _same(a: Parting | None, b: Parting | None) -> bool:
    return a is not None and b is not None and a.phase == b.phase and a.site == b.site


def _divergence(hazards: Hazards, parting: Parting, factor: str, forced: Decision | None = None,
                force: Force | ForceDraws | None = None) -> None:
    """A ZG2xx hazard where two runs part: by the factor that differed (or the forced decision's taint)."""
    site = parting.site or (forced.site if forced is not None else None)
    if site is None:
        return
    if forced is not None and forced.site is not None:
        decided = site_of(*forced.site)
        if ("ZG2", decided.file, decided.line) in hazards.found:
            return  # the ranks parted at the forced decision itself already: one finding per decision
    code = {"rank": "ZG201", "random": "ZG202"}.get(factor) or data_code(site)
    cause = {"rank": "the process rank", "random": "the random state"}.get(factor, "this rank's data")
    nxt = f"`{parting.ours}`" if parting.ours else "nothing more"
    other = f"`{parting.theirs}`" if parting.theirs else "nothing more"
    where = "" if parting.phase == "step" else f" in `{parting.phase.removeprefix('entry ')}`"
    if forced is None:
        message = (f"ranks run different modules after this statement{where}: one rank calls {nxt} next, another "
                   f"calls {other}; the decision depends on {cause}, and ranks that skip a call hang in its "
                   "parameter all-gather")
    else:
        fs = forced.site
        at = f" (line {fs[1]})" if fs is not None and fs[0] == site[0] and fs[1] != site[1] else ""
        if isinstance(force, ForceDraws):
            end = "high" if force.high else "low"
            what = (f"a random draw{at} decides which modules run here{where}: with `{forced.op}` at the {end} end "
                    f"of its range, the next call is {other} instead of {nxt}")
        else:
            what = (f"a decision on tensor values{at} changes which modules run here{where}: answered the other "
                    f"way, `{forced.op}` makes the next call {other} instead of {nxt}")
        message = (f"{what}; it depends on {cause}, so ranks can run different modules and hang in their parameter "
                   "all-gathers")
    hazards.add(Hazard(code, site_of(*site), message, _HELP[code]))


def _forced_decisions(runs: _Runs, reference: RunRecord, records: list[RunRecord], unsteady: Parting | None,
                      notes: list[str]) -> None:
    expect = calls_of(reference.phases)
    started = time.monotonic()
    candidates = list(_candidates(reference, records))
    tried = 0
    for decision, factor, force in candidates:
        if tried >= MAX_FORCED or time.monotonic() - started > FORCED_SECONDS:
            notes.append(f"{len(candidates) - tried} decision(s) on tensor values not tried the other way "
                         f"(limit: {MAX_FORCED} runs or {FORCED_SECONDS:.0f} s)")
            break
        tried += 1
        rec = runs.run(Factors(0, 0, 0), checked=False, force=force, expect=expect)
        if not rec.forced:
            continue
        parting = runs.parting(reference, rec, lambda f=force: runs.run(Factors(0, 0, 0), lines=True, checked=False,
                                                                          force=f, expect=expect))
        if parting is not None and not _same(parting, unsteady):
            _divergence(hazards=runs.hazards, parting=parting, factor=factor, forced=decision, force=force)


def _candidates(reference: RunRecord, records: list[RunRecord]) -> Iterator[tuple[Decision, str, Force | ForceDraws]]:
    """Decisions of the reference whose answer could differ on another rank, first occurrence of each line,
    with what they depend on (`data` or `random`: taint, else the variant run whose values differed) and how
    to force them: the draws of a decision on draws alone, else the decision itself."""
    values: dict[tuple, list] = {}
    for d in reference.decisions:
        values.setdefault((d.op, d.site), []).append(d.value)
    differs: dict[tuple, str] = {}
    for rec in records:
        mine: dict[tuple, list] = {}
        for d in rec.decisions:
            mine.setdefault((d.op, d.site), []).append(d.value)
        for key, vals in mine.items():
            if key in values and values[key] != vals and key not in differs:
                differs[key] = _factor(rec.factors)
    seen: set = set()
    for d in reference.decisions:
        key = (d.op, d.site)
        if key in seen or d.site is None:
            continue
        seen.add(key)
        factor = "data" if "data" in d.taint else "random" if "random" in d.taint else differs.get(key)
        if factor is None:
            continue
        draws = draws_of(d.taint) if factor == "random" else None
        if draws is not None:
            if draws not in seen:
                seen.add(draws)
                yield d, factor, ForceDraws(draws, high=False)
                yield d, factor, ForceDraws(draws, high=True)
            continue
        for variant in range(variants(d.value)):
            yield d, factor, Force(d.op, d.site, d.occurrence, variant)


def _finding(h: Hazard, rules) -> Finding:
    from zgen.findings import Severity

    info = rules.get(h.code) if hasattr(rules, "get") else None
    kwargs = {"severity": info.severity} if info is not None else {}
    if h.severity is not None:
        kwargs["severity"] = Severity(h.severity)
    return Finding(code=h.code, message=h.message, path=h.site.path, line=h.site.line, column=h.site.column,
                   end_line=h.site.end_line, end_column=max(h.site.end_column, h.site.column + 1), help=h.help,
                   source=Source.TRACE, **kwargs)


_HELP = {
    "ZG201": "run the call on every rank and make only its side effects (logging, writing files) rank-specific",
    "ZG202": "take the decision on one rank and broadcast it (or draw it from a generator seeded alike on every "
             "rank), or disable the random skip under ZeRO-3",
    "ZG203": "call every submodule on every rank (an empty selection is a valid input), or weight every "
             "expert's output by its gate",
    "ZG204": "decide the exit on a value every rank shares: `all_reduce` the flag before leaving the loop (as "
             "`generate(synced_gpus=True)` does)",
    "ZG205": "run the submodule on every rank (on a dummy input when this batch lacks it), or give every rank "
             "the same inputs",
}
