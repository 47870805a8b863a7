"""Static checks of PyTorch model source for ZeRO-3 hazards (ZG1xx-ZG3xx, ZG901).

The public surface the engine calls. Importing this package is cheap: it
imports neither torch nor libcst; the checker is loaded on first use.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import TYPE_CHECKING

from zgen.kept_code import kept_dataclass_code

if TYPE_CHECKING:
    from zgen.findings import Finding, RuleInfo
    from zgen.launch import ModelShape

__all__ = ["check_source", "rule_infos", "model_shape", "load_checker"]


def check_source(
    path: str,
    source: str,
    enabled: frozenset[str] | None = None,
    deps: dict[str, str] | None = None,
    *,
    persistence_threshold: int | None = None,
) -> list[Finding]:
    """All findings for one .py file, sorted.

    `enabled` is the set of rule codes to run (None: all). Never raises on
    bad input: a file that does not parse gives one ZG901 finding at the
    error. It never imports or runs the checked code, but reads the source of
    the files that define the classes it imports (found from `path`'s package
    and `sys.path`); `deps`, when given, receives each such file with its
    content hash, so a cache can tell when the findings go stale.
    `persistence_threshold` is the config's `stage3_param_persistence_threshold`
    (None: DeepSpeed's default, 1e5): smaller parameters stay gathered.
    """
    return load_checker().check(path, source, enabled, deps, persistence_threshold)


def load_checker() -> ModuleType:
    """`zgen.model.check`, imported on first use with its rules and analyses (their dataclasses' methods compiled
    from code kept by an earlier run, `zgen.kept_code`)."""
    loaded = sys.modules.get("zgen.model.check")
    if loaded is None:
        with kept_dataclass_code("zgen.model"):
            from . import check as loaded
    return loaded


def rule_infos() -> list[RuleInfo]:
    """Documentation and defaults of every model rule code (ZG1xx-ZG3xx, ZG901)."""
    return [rule.info() for rule in load_checker().ALL_RULES]


def model_shape(path: str, source: str) -> ModelShape | None:
    """Best-effort parameter count and dimensions from literal shapes in the source; None if unsure."""
    from .analysis.shape import model_shape as compute

    return compute(path, source)
