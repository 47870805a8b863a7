"""Run the model rules over one file (the body of `zgen.model.check_source`)."""

from __future__ import annotations

import ast
import gc
import operator
import re
from collections.abc import Iterator
from contextlib import contextmanager

from zgen.findings import Finding, sort_findings

from .program.index import ModelIndex
from .program.project import project
from .program.skeleton import SourceError, build_skeleton, with_lf
from .program.tree import forget_children
from .rules import ALL_RULES
from .rules.zg901_unparsable import Unparsable

__all__ = ["check"]


def check(
    path: str,
    source: str,
    enabled: frozenset[str] | None,
    deps: dict[str, str] | None = None,
    persistence_threshold: int | None = None,
) -> list[Finding]:
    """All findings of the enabled rules for one file, sorted, each reported once.

    Classes the file imports are read from their source files (never imported);
    `deps`, when given, receives each file read that way with its content hash.
    """
    with _no_cycle_collection():
        return _check(path, source, enabled, deps, persistence_threshold)


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Python's cycle collector paused while one file is checked, then restored.

    Parsing builds hundreds of thousands of nodes that live until the file is
    done; each collection the allocations trigger walks all of them again (a
    quarter of a check's CPU time). A file's garbage is collected once after it.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _check(
    path: str,
    source: str,
    enabled: frozenset[str] | None,
    deps: dict[str, str] | None,
    persistence_threshold: int | None,
) -> list[Finding]:
    source = with_lf(source)  # (a file saved with `\r\n` reads as one saved with `\n`)
    skeleton = build_skeleton(source)
    if isinstance(skeleton, SourceError):
        if enabled is not None and Unparsable.code not in enabled:
            return []
        return [Unparsable.from_error(path, skeleton)]
    other_files = project()
    module, is_package = other_files.begin(path)
    index = ModelIndex(path, source, skeleton, other_files, module, is_package)
    if persistence_threshold is not None:
        index.persistence_threshold = persistence_threshold
    reports = []
    # A file of TensorFlow, Keras, JAX or Flax code that does not import torch holds no PyTorch model: no rule
    # has anything to find there (transformers ships such a twin of most of its model files).
    for rule in ALL_RULES if not index.other_framework else ():
        if enabled is None or rule.code in enabled:
            reports.extend(rule().check(index))
    by_snippet: dict[int, list] = {}
    for report in reports:
        by_snippet.setdefault(id(report.snippet), []).append(report)
    for group in by_snippet.values():
        group[0].snippet.locate([r.node for r in group] + [r.through for r in group if r.through is not None])
    seen: dict[tuple[str, int, int], Finding] = {}
    dead = _dead_lines(source) if reports and _CONSTANT_TEST.search(source) else ()
    for report in reports:
        finding = report.to_finding()
        if any(start <= finding.line <= end for start, end in dead):
            continue  # under `if False:` / `if 0 > 0:`: code that never runs
        # An inherited method is checked once per subclass; report each site once.
        seen.setdefault((finding.code, finding.line, finding.column), finding)
    if deps is not None:
        deps.update(other_files.deps)
    index.release()
    forget_children()  # (the children kept for this file's walks)
    return sort_findings(seen.values())


# `if False:`, `if 0:`, `if 0 > 0:`, `elif None:`: a test of constants alone (the text trigger of `_dead_lines`).
_CONSTANT_TEST = re.compile(
    r"^[ \t]*(?:el)?if[ \t]+(?:not[ \t]+)?\(?[ \t]*(?:True|False|None|-?\d+(?:\.\d+)?)[ \t]*"
    r"(?:(?:[<>]=?|[=!]=)[ \t]*-?\d+(?:\.\d+)?[ \t]*)?\)?[ \t]*:",
    re.M,
)


def _dead_lines(source: str) -> list[tuple[int, int]]:
    """Line ranges of blocks that never run: the body of an `if` whose test is a falsy constant or a comparison of
    constants (`if False:`, `if 0 > 0:`), or the `else` of one that is truthy."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    dead = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.If):
            continue
        value = _constant_value(node.test)
        if value is None:
            continue
        block = node.orelse if value else node.body
        if block:
            dead.append((block[0].lineno, max(getattr(s, "end_lineno", s.lineno) or s.lineno for s in block)))
    return dead


_COMPARE = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
            ast.Eq: operator.eq, ast.NotEq: operator.ne}


def _constant_value(test: ast.expr) -> bool | None:
    """The truth of a test of constants alone (`False`, `0`, `not True`, `0 > 0`), or None when it reads anything."""
    if isinstance(test, ast.Constant) and isinstance(test.value, (bool, int, float, type(None))):
        return bool(test.value)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _constant_value(test.operand)
        return None if inner is None else not inner
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _COMPARE:
        left, right = test.left, test.comparators[0]
        if all(isinstance(v, ast.Constant) and isinstance(v.value, (int, float)) for v in (left, right)):
            return bool(_COMPARE[type(test.ops[0])](left.value, right.value))  # type: ignore[attr-defined]
    return None
