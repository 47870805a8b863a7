"""`check_config`: bytes of a DeepSpeed config -> findings, resolved config, memory, valid world sizes.

Stages: decode (ZC001) -> parse with positions (ZC002-ZC006) -> schema walk
(ZC010-ZC021) -> z3 rules (ZC1xx-ZC5xx, ZC9xx) -> resolve -> memory (ZC601).
Each stage turns problems into findings at the key that causes them; only a
user rule file that cannot be loaded raises (ZgenError).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

from zgen.config.autofill import CONSUMERS, describe, hf_fill
from zgen.config.edit import edits_for, rename_key
from zgen.config.parse import Node, Span, parse
from zgen.config.resolve import resolve
from zgen.config.resolved import Origin, ResolvedConfig
from zgen.config.schema import parse_version, schema_for
from zgen.config.validate import ConfigValues, Problem, validate
from zgen.errors import ZgenError
from zgen.findings import Finding, Fix, Related, Severity, sort_findings
from zgen.launch import LaunchFacts
from zgen.memory import MemoryBreakdown, cheapest_fit, estimate
from zgen.solver.rules import load_rules
from zgen.solver.fix import fix_text
from zgen.solver.solve import LaunchValues, solve

__all__ = ["ConfigReport", "check_config"]

_TOP = Span(1, 1, 1, 1)

# With no sign of who reads the config, `"auto"` is read the way HF/accelerate templates use it.
_INFERRED_DEFAULT = "hf"
_DEFAULT_REASON = ("no training script among the checked files shows who reads the config; `\"auto\"` is read "
                   "as HF Trainer fills it (give `--consumer` to choose)")


@dataclass(frozen=True)
class ConfigReport:
    """What `zgen check` learns about one config file.

    `findings` are sorted; `resolved` is None when the config cannot be read or
    its batch sizes cannot be resolved; `memory` is present when the parameter
    count is known; `valid_world_sizes` is present when no world size was given.
    """

    findings: tuple[Finding, ...]
    resolved: ResolvedConfig | None
    memory: MemoryBreakdown | None
    valid_world_sizes: tuple[int, ...] | None


def _finding(path: str, code: str, message: str, span: Span, key: str = "", help: str | None = None,
             severity: Severity = Severity.ERROR, related: tuple[Related, ...] = ()) -> Finding:
    return Finding(code=code, message=message, path=path, line=span.line, column=span.column,
                   end_line=span.end_line, end_column=span.end_column, severity=severity, help=help, key=key,
                   related=related)


def _severity(code: str, override: Severity | None) -> Severity:
    if override is not None:
        return override
    for doc in load_rules().docs:
        if doc.code == code:
            return doc.severity
    return Severity.ERROR


def _decode(path: str, data: bytes) -> tuple[str | None, Finding | None]:
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        span = Span(line, column, line, column + 1)
        return None, _finding(path, "ZC001", f"the config is not valid UTF-8 (byte 0x{data[e.start]:02x} at offset "
                              f"{e.start}); DeepSpeed cannot read it", span,
                              help="save the file as UTF-8")


def check_config(path: str, data: bytes, facts: LaunchFacts, rule_files: Sequence[str] = ()) -> ConfigReport:
    """Check one config; see the module docstring. Raises ZgenError only for a bad rule file or version."""
    version = parse_version(facts.deepspeed_version)
    if facts.consumer is not None and facts.consumer not in CONSUMERS:
        raise ZgenError(f"`{facts.consumer}` is not a config reader zgen knows",
                        help=f"use one of {', '.join(CONSUMERS)} (`--consumer`)")
    for name in ("world_size", "gpus_per_node", "gpu_mem_bytes"):
        value = getattr(facts, name)
        if value is not None and value < 1:
            raise ZgenError(f"{name.replace('_', ' ')} must be at least 1, not {value}")
    ruleset = load_rules(rule_files)
    text, bad = _decode(path, data)
    if text is None:
        return ConfigReport((bad,), None, None, None)
    parsed = parse(text)
    findings: list[Finding] = []
    for dup in parsed.duplicates:
        findings.append(_finding(
            path, "ZC003", f"`{dup.path}` is written twice (first at line {dup.first.line}); DeepSpeed rejects "
            "duplicate keys", dup.second, dup.path, help="keep one of them",
            related=(Related(path=path, line=dup.first.line, column=dup.first.column, message="first written here"),)))
    if parsed.root is None:
        problem = parsed.problem
        code = "ZC004" if problem.too_deep else "ZC005" if problem.overflow else "ZC002"
        findings.append(_finding(path, code, f"invalid config: {problem.message}", problem.span,
                                 help="DeepSpeed reads the file with hjson: JSON plus comments, unquoted keys "
                                 "and optional commas"))
        return ConfigReport(tuple(sort_findings(findings)), None, None, None)
    if parsed.root.kind != "object":
        findings.append(_finding(path, "ZC006", "the config must be an object of settings, not a "
                                 f"{'list' if parsed.root.kind == 'array' else parsed.root.kind}", parsed.root.span,
                                 help="wrap the settings in `{ ... }`"))
        return ConfigReport(tuple(sort_findings(findings)), None, None, None)
    consumer = facts.consumer or _INFERRED_DEFAULT
    # A `.hjson` file with no sign of its reader is taken as meant for DeepSpeed's own reader.
    lenient = path.endswith(".hjson") and facts.consumer is None
    strict = None if lenient else _strict_json_problem(path, text, consumer)
    if strict is not None:
        findings.append(strict)
        return ConfigReport(tuple(sort_findings(findings)), None, None, None)
    values, problems = validate(parsed.root, schema_for(version), version, consumer)
    findings.extend(_problem_finding(path, p, text) for p in problems)
    return _solve(path, findings, values, facts, ruleset, version, _Source(parsed.root, text))


def _strict_json_problem(path: str, text: str, consumer: str) -> Finding | None:
    """ZC002 where the reader parses with `json` (HF Trainer, accelerate, zgen) and the text is not JSON.

    DeepSpeed itself reads the file with hjson (comments, unquoted keys, optional commas); the others
    call `json.load` and stop with `JSONDecodeError` on what hjson forgives.
    """
    import json

    if consumer == "deepspeed":
        return None
    try:
        json.loads(text)
    except json.JSONDecodeError as e:
        line, col = e.lineno, e.colno
        return _finding(path, "ZC002", f"invalid config: {e.msg}; {describe(consumer)} reads it with `json.load`, "
                        "which rejects it (only DeepSpeed's own hjson reader forgives it)", Span(line, col, line, col + 1),
                        help="make it plain JSON (no trailing or missing commas, no comments), or say that DeepSpeed "
                        "reads it directly with `--consumer deepspeed`")
    return None


def _problem_finding(path: str, p: Problem, text: str) -> Finding:
    finding = _finding(path, p.code, p.message, p.span, p.key, p.help, _severity(p.code, p.severity))
    if not p.rename:
        return finding
    old = p.key.rpartition(".")[2]
    # A key DeepSpeed rejects fails the run as written: renaming it is safe. Renaming an ignored key
    # turns on a setting that was off, so that is offered only.
    fix = Fix(message=f"rename `{old}` to `{p.rename}`", edits=(rename_key(text, p.span, p.rename),),
              applicability="safe" if finding.severity == Severity.ERROR else "unsafe")
    return replace(finding, fix=fix)


@dataclass(frozen=True)
class _Source:
    """The parsed tree and the text it came from, for turning a fix into text edits."""

    root: Node
    text: str


def _solve(path, findings, values: ConfigValues, facts: LaunchFacts, ruleset, version, source: _Source) -> ConfigReport:
    model = facts.model
    launch = LaunchValues(
        world_size=facts.world_size,
        gpus_per_node=facts.gpus_per_node,
        gpu_mem=facts.gpu_mem_bytes,
        params=model.params if model else None,
        seq_len=model.seq_len if model else None,
    )
    explain = {d.key: d.explain for d in ruleset.derives}
    memory_check = model is not None and facts.gpu_mem_bytes is not None
    base: list[ResolvedConfig] = []

    def memory_ok(world: int, model_values: dict) -> bool:
        if not memory_check:
            return True
        if not base:
            base.append(_resolve(values, model_values, frozenset(), explain, world, facts, path))
        mbs = model_values.get("train_micro_batch_size_per_gpu") or base[0].train_micro_batch_size_per_gpu
        cand = replace(base[0], world_size=world, train_micro_batch_size_per_gpu=int(mbs))
        return estimate(cand, model).total <= facts.gpu_mem_bytes

    outcome = solve(ruleset, values, launch, version, memory_ok, hf_fill(model))
    for v in outcome.violations:
        findings.append(_violation_finding(path, values, v, source))
    if outcome.conflict is not None:
        code = "ZC902" if facts.world_size is None else "ZC901"
        keys = outcome.conflict
        listed = ", ".join(f"`{k}` ({_show_key(values, outcome.values, k)})" for k in keys
                           if values.has(k) or k == "world_size")
        by = f" (rules {', '.join(outcome.conflict_rules)})" if outcome.conflict_rules else ""
        if code == "ZC902":
            message = f"no world size up to 1024 makes the config valid; these keys rule out every launch: {listed}{by}"
        else:
            message = f"these keys cannot all hold together: {listed}{by}"
        span = _span(values, keys[0]) if keys else _TOP
        findings.append(_finding(path, code, message, span, keys[0] if keys else "",
                                 help="change one of them; run with `--world-size` for a specific diagnosis",
                                 related=_related(path, values, keys[1:], outcome.values)))
    sizes = outcome.valid_world_sizes
    failed = any(v.rule.severity == Severity.ERROR for v in outcome.violations)
    if facts.world_size is None and sizes == () and outcome.conflict is None and not failed:
        findings.append(_finding(path, "ZC902", "no world size up to 1024 makes the config valid"
                                 + (" within the GPU memory given" if memory_check else ""), _TOP,
                                 help="run with `--world-size` to see which rule fails"))
    resolved = None
    memory = None
    world = outcome.world_size
    batch_errors = any(v.rule.code.startswith("ZC10") for v in outcome.violations)
    if world is not None and not batch_errors and outcome.conflict is None:
        origin = (Origin(kind="config", detail="--world-size") if facts.world_size is not None
                  else Origin(kind="derived", detail="not given; the smallest world size for which the config is valid"))
        resolved = _resolve(values, outcome.values, outcome.forced_autos, outcome.derived, world, facts, path, origin)
        if model is not None:
            memory = replace(estimate(resolved, model), gpu_mem_bytes=facts.gpu_mem_bytes)
            if memory_check and facts.world_size is not None and memory.total > facts.gpu_mem_bytes:
                findings.append(_oom_finding(path, values, resolved, memory, facts))
    return ConfigReport(tuple(sort_findings(findings)), resolved, memory, sizes)


def _resolve(values, model_values, forced, explain, world, facts, path, origin=None) -> ResolvedConfig:
    origin = origin or Origin(kind="config", detail="world size")
    resolved = resolve(values, model_values, forced, explain, world, origin, facts.model, path)
    given = facts.consumer is not None and facts.consumer_reason.startswith(("--consumer", "`consumer`", "given"))
    consumer = Origin(kind="config" if given else "derived",
                      detail=facts.consumer_reason or ("given" if facts.consumer else _DEFAULT_REASON))
    origins = tuple(sorted((*resolved.origins, ("consumer", consumer))))
    return replace(resolved, consumer=values.consumer, origins=origins)


def _written(values: ConfigValues, key: str) -> object:
    s = values.settings.get(key)
    return s.value if s is not None else None


def _show_key(values: ConfigValues, model_values: dict, key: str) -> str:
    s = values.settings.get(key)
    if s is not None and s.state == "auto":
        return '"auto"'
    return _show(model_values.get(key, _written(values, key)))


def _show(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "not set" if value is None else str(value)


def _span(values: ConfigValues, key: str) -> Span:
    return values.span_of(key) or _TOP


def _related(path: str, values: ConfigValues, keys, model_values: dict) -> tuple[Related, ...]:
    out = []
    for k in keys:
        span = _span(values, k)
        if k in ("world_size", "gpus_per_node", "gpu_mem", "params", "seq_len"):
            note = f"{k.replace('_', ' ')} {_show(model_values.get(k))} (launch fact)"
        elif values.has(k):
            note = f"`{k}` = {_show(model_values.get(k, _written(values, k)))}"
        elif model_values.get(k) in (None, ""):
            note = f"`{k}` is not written"
        else:
            note = f"`{k}` is not written (DeepSpeed uses {_show(model_values.get(k))})"
        out.append(Related(path=path, line=span.line, column=span.column, message=note + " takes part in this"))
    return tuple(out)


def _fix(values: ConfigValues, v, source: _Source, words: str | None) -> Fix | None:
    """The violation's smallest fix as text edits.

    `safe` (applied by `--fix`) only for an error, whose config fails as written, and only when no other
    edit of the same cost works; a warning's fix changes a run that works, so it is offered, not applied.
    """
    if not v.fix:
        return None
    written = {k: s.written for k, s in values.settings.items()}
    edits = edits_for(source.root, source.text, v.fix, written)
    if not edits:
        return None
    safe = v.fix_unique and v.rule.severity == Severity.ERROR
    return Fix(message=words or fix_text(v.fix), edits=edits, applicability="safe" if safe else "unsafe")


def _violation_finding(path: str, values: ConfigValues, v, source: _Source) -> Finding:
    keys = list(v.keys)
    written = [k for k in keys if values.has(k)]
    anchor = v.rule.anchor if v.rule.anchor and values.has(v.rule.anchor) else (written[0] if written else
                                                                               (v.rule.anchor or (keys[0] if keys else "")))
    span = _span(values, anchor) if anchor else _TOP
    others = [k for k in keys if k != anchor]
    finding = _finding(path, v.rule.code, v.message, span, anchor, v.help, v.rule.severity,
                       _related(path, values, others, v.values))
    return replace(finding, fix=_fix(values, v, source, fix_text(v.fix) if v.fix else None))


def _gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB"


def _oom_finding(path, values: ConfigValues, resolved: ResolvedConfig, memory: MemoryBreakdown, facts) -> Finding:
    parts = " + ".join(f"{i.name} {_gib(i.bytes)}" for i in memory.items if i.bytes)
    fit = cheapest_fit(resolved, facts.model, facts.gpu_mem_bytes)
    if fit is None:
        help = "no single change zgen tries (stage, micro batch, offload, world size) fits; see `--show-memory`"
    else:
        help = f"{fit[0]} (estimated {_gib(fit[1].total)} per GPU)"
    anchor = next((k for k in ("zero_optimization.stage", "train_micro_batch_size_per_gpu") if values.has(k)), "")
    span = _span(values, anchor or "zero_optimization")
    return _finding(
        path, "ZC601",
        f"estimated memory per GPU is {_gib(memory.total)}, more than the {_gib(facts.gpu_mem_bytes)} available: {parts}",
        span, anchor, help,
    )
