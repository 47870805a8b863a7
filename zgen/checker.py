"""Run the checks: model sources through the model rules, configs through the solver.

`check_paths` is the one entry point (the CLI's `check`, `emit`'s pre-check
and the pre-commit hook all go through it). It expands paths, pairs a model
with its config from `[tool.zgen]`, runs uncached sources in worker
processes, applies suppressions and selection, and returns every finding in
the stable order. It never imports torch and never imports user code.

A file that cannot be read or decoded does not stop the run: it becomes a
ZG901 finding on that file (like ruff's E902) and the other files are
checked as usual, so the exit code is 1 (findings), not 2. A directory that
cannot be read becomes a note in `CheckResult.notes`, printed as a warning.
"""

from __future__ import annotations

import gc
import hashlib
import os
import sys
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from zgen.cache import FindingsCache, cache_key, code_fingerprint
from zgen.config.consumer import with_consumer
from zgen.discover import discover, display_path
from zgen.errors import ZgenError
from zgen.findings import Finding, RuleInfo, Severity, merge_trace_findings, sort_findings
from zgen.launch import LaunchFacts, ModelShape
from zgen.model.program.project import project
from zgen.noqa import apply_noqa
from zgen.registry import all_rules
from zgen.selection import Selection, validate_selectors
from zgen.settings import DEFAULT_EXCLUDE, Settings

__all__ = ["CheckResult", "check_paths", "selection_from", "persistence_threshold"]

# Below this many uncached files, worker start-up costs more than it saves.
_PARALLEL_MIN_FILES = 8


@dataclass(frozen=True)
class CheckResult:
    """What one check run found. `configs` maps each checked config's display path to its report."""

    findings: list[Finding]
    configs: dict = field(default_factory=dict)
    sources: tuple[str, ...] = ()
    rules: dict[str, RuleInfo] = field(default_factory=dict)
    cached: int = 0
    # Warnings that did not stop the run (unreadable directories, paths skipped by --force-exclude).
    notes: tuple[str, ...] = ()

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.ERROR]


def selection_from(settings: Settings, rules: dict[str, RuleInfo]) -> Selection:
    """Validate the settings' selectors against known codes and build the `Selection`."""
    known = set(rules)
    where = str(settings.pyproject or "command line")
    validate_selectors(settings.select, known, where)
    validate_selectors(settings.extend_select, known, where)
    validate_selectors(settings.ignore, known, where)
    for _glob, codes in settings.per_file_ignores:
        validate_selectors(codes, known, f"{where}: per-file-ignores")
    return Selection(
        select=settings.select + settings.extend_select,
        ignore=settings.ignore,
        per_file_ignores=settings.per_file_ignores,
    )


def check_paths(
    paths: Sequence[str],
    settings: Settings,
    facts: LaunchFacts,
    *,
    force_exclude: bool = False,
    jobs: int | None = None,
    use_cache: bool = True,
    trace_findings: Sequence[Finding] = (),
) -> CheckResult:
    """Check `paths` (files or directories; empty means `settings.src` plus the configured model and config).

    `trace_findings` are what `zgen check --trace` saw while the model ran: they are merged with the
    static findings (one finding per hazard, see `merge_trace_findings`) before suppressions and
    selection, which apply to them exactly as to static findings, in whatever file they point at.
    """
    rules = all_rules(settings.rules)
    selection = selection_from(settings, rules)
    cwd = Path.cwd()
    configured = tuple(p for p in settings.exclude if p not in DEFAULT_EXCLUDE) + settings.extend_exclude
    inputs = discover(_with_pairing(list(paths), settings, cwd), settings.exclude + settings.extend_exclude,
                      force_exclude=force_exclude, cwd=cwd, explicit=configured)

    enabled = selection.enabled_codes(rules)
    cache = FindingsCache(settings.resolve(settings.cache_dir) if use_cache else None)
    if use_cache:  # skeletons of library files read for cross-file facts, kept beside the findings
        project().summary_dir = str(settings.resolve(settings.cache_dir) / "summaries")
    findings: list[Finding] = []
    sources: dict[str, str] = {}
    todo: list[tuple[str, str, str]] = []
    cached = 0
    threshold = persistence_threshold(inputs.configs)
    key_extra = selection.key() + (f"|persist={threshold}" if threshold is not None else "")
    # Library classes are resolved on the interpreter's import path: another environment (a package
    # installed since, a pre-commit hook's venv) can resolve a base class that was unknown before.
    key_extra += "|path=" + hashlib.sha1("\0".join(p for p in sys.path if p).encode()).hexdigest()[:16]
    if use_cache:  # findings another zgen made (an upgrade keeping the version string) are no hit
        key_extra += "|code=" + code_fingerprint()
    for path in inputs.sources:
        data = _read(path)
        if isinstance(data, Finding):
            findings.append(data)
            continue
        text, decode_problem = _decode(path, data)
        sources[path] = text
        if decode_problem is not None:
            findings.append(decode_problem)
            continue
        key = cache_key(path, data, key_extra)
        hit = cache.get(key)
        if hit is None:
            todo.append((key, path, text))
        else:
            cached += 1
            findings.extend(hit)
    if todo:  # (what earlier runs of this process found on disk is looked up again; each file has its own view)
        project().start_run()
    for key, path, result, deps in _run_model_checks(todo, enabled, jobs, threshold):
        cache.put(key, result, deps)
        findings.extend(result)
    cache.save()
    if trace_findings:
        findings = merge_trace_findings(findings, list(trace_findings))

    # Suppressions and per-file ignores apply after caching, so editing them needs no re-parse.
    by_path: dict[str, list[Finding]] = {}
    for f in findings:
        by_path.setdefault(f.path, []).append(f)
    kept: list[Finding] = []
    for path, fs in by_path.items():
        if path in sources:
            fs = apply_noqa(path, sources[path], fs, set(rules), lambda c, p=path: selection.enabled_for(p, c))
        elif (text := _text_for_noqa(path)) is not None:
            # A file only the trace reached (a library's): its `# noqa` hides findings; the static rules
            # did not run on it, so its directives are not reported as unused.
            fs = [f for f in apply_noqa(path, text, fs, set(rules), lambda c, p=path: selection.enabled_for(p, c))
                  if f.code not in _NOQA_META or f in fs]
        kept.extend(f for f in fs if selection.enabled_for(path, f.code))

    reports = {}
    if inputs.configs:
        from zgen.config import check_config

        facts = with_consumer(_with_model_shape(facts, settings, inputs.sources, sources, cwd), sources)
        for path in inputs.configs:
            data = _read(path)
            if isinstance(data, Finding):
                kept.append(data)
                continue
            report = check_config(path, data, facts, rule_files=[str(settings.resolve(r)) for r in settings.rules])
            reports[path] = report
            kept.extend(f for f in report.findings if selection.enabled_for(path, f.code))
    return CheckResult(sort_findings(kept), reports, inputs.sources, rules, cached, inputs.notes)


# What `apply_noqa` adds about the directives themselves (unused, unknown code).
_NOQA_META = frozenset({"ZG902", "ZG903"})


def _text_for_noqa(path: str) -> str | None:
    """A source file's text for its `# noqa` directives, or None when it cannot be read as text."""
    data = _read(path)
    if isinstance(data, Finding):
        return None
    text, problem = _decode(path, data)
    return None if problem is not None else text


def _with_pairing(paths: list[str], settings: Settings, cwd: Path) -> list[str]:
    """Add the configured model/config partner of any given file; with no paths, check the project.

    A `pyproject.toml` among the paths (the pre-commit hook names it when `[tool.zgen]` changed) stands for
    what its settings decide: the configured model and config are checked under the new settings.
    """
    pair = [settings.resolve(p) for p in (settings.model_path, settings.config) if p]
    if not paths:
        return [str(settings.resolve(s)) for s in settings.src] + [str(p) for p in pair if p.exists()]
    if any(Path(p).name == "pyproject.toml" for p in paths):
        paths = [p for p in paths if Path(p).name != "pyproject.toml"] + [str(p) for p in pair if p.exists()]
        if not paths:
            return []
    given = {Path(os.path.normpath(cwd / p)) for p in paths}
    if any(p in given for p in pair):
        paths = paths + [str(p) for p in pair if p not in given and p.exists()]
    return paths


def _read(path: str) -> bytes | Finding:
    """The file's bytes, or a ZG901 finding saying why it cannot be read (the run goes on)."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        return Finding(
            code="ZG901", message=f"file cannot be read: {e.strerror or e}", path=path,
            line=1, column=1, end_line=1, end_column=1,
            help="make the file readable, or exclude it with `extend-exclude` in `[tool.zgen]`",
        )


def _decode(path: str, data: bytes) -> tuple[str, Finding | None]:
    """Decode as Python does (PEP 263 cookie, else UTF-8); a file that cannot be decoded is a ZG901 finding."""
    import io

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding), None
    except (SyntaxError, UnicodeDecodeError, LookupError) as e:
        line = data[: getattr(e, "start", 0)].count(b"\n") + 1
        return data.decode("utf-8", errors="replace"), Finding(
            code="ZG901", message=f"file cannot be decoded as Python source: {e}", path=path,
            line=line, column=1, end_line=line, end_column=1,
            help="save the file as UTF-8 or declare its encoding in a `# -*- coding: ... -*-` line",
        )


def _check_one(args: tuple[str, str, str, frozenset[str], int | None]) -> tuple[str, str, list[Finding], dict[str, str]]:
    from zgen.model import check_source

    key, path, text, enabled, threshold = args
    deps: dict[str, str] = {}
    return key, path, check_source(path, text, enabled, deps, persistence_threshold=threshold), deps


def persistence_threshold(configs: Sequence[str]) -> int | None:
    """`stage3_param_persistence_threshold` of the configs checked with the models (the smallest when they
    differ, so no parameter is taken as gathered that one of them partitions); None: DeepSpeed's default.

    A config that cannot be read or holds no number here leaves the default: its own check reports why.
    """
    from zgen.config import load_config_dict

    found: list[int] = []
    for path in configs:
        try:
            zero = load_config_dict(path).get("zero_optimization")
        except ZgenError:
            continue
        if not isinstance(zero, dict):
            continue
        value = zero.get("stage3_param_persistence_threshold", zero.get("param_persistence_threshold"))
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
            found.append(int(value))
    return min(found) if found else None


def _run_model_checks(todo, enabled: frozenset[str], jobs: int | None, threshold: int | None = None):
    if not todo:
        return []
    work = [(k, p, t, enabled, threshold) for k, p, t in todo]
    jobs = jobs or os.cpu_count() or 1
    if jobs <= 1 or len(work) < _PARALLEL_MIN_FILES:
        return [_check_one(w) for w in work]
    import concurrent.futures
    import multiprocessing

    from zgen.model import load_checker
    from zgen.model.program.tree import load_libcst

    load_checker()  # the checker's modules loaded before fork, so workers start warm

    load_libcst()
    # Largest files first, so no worker is left with a big file at the end.
    work.sort(key=lambda w: -len(w[2]))
    method = "fork" if sys.platform.startswith("linux") else "spawn"
    # What is loaded now lives as long as the workers: their cycle collector need not walk it again.
    gc.freeze()
    try:
        with concurrent.futures.ProcessPoolExecutor(max_workers=min(jobs, len(work)),
                                                    mp_context=multiprocessing.get_context(method)) as pool:
            return list(pool.map(_check_one, work, chunksize=1))
    finally:
        gc.unfreeze()


def _with_model_shape(facts: LaunchFacts, settings: Settings, model_files: Sequence[str],
                      sources: dict[str, str], cwd: Path) -> LaunchFacts:
    """Fill `facts.model` from `--params`, else from the configured or the only model file with literal shapes."""
    if facts.model is not None:
        return facts
    if settings.params:
        return replace(facts, model=ModelShape(params=settings.params, seq_len=settings.seq_len, source="--params"))
    from zgen.model import model_shape

    candidates = list(model_files)
    if settings.model_path:
        configured = display_path(settings.resolve(settings.model_path), cwd)
        candidates = [configured] if configured in sources else candidates
    shapes = [s for p in candidates if (s := model_shape(p, sources[p])) is not None] if candidates else []
    if len(shapes) != 1:
        return facts
    shape = shapes[0]
    if settings.seq_len and shape.seq_len != settings.seq_len:
        shape = replace(shape, seq_len=settings.seq_len)
    return replace(facts, model=shape)
