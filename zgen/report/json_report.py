"""Ruff-compatible JSON: a list of findings with `location`/`end_location` rows and columns."""

from __future__ import annotations

import json
from pathlib import Path

from zgen.findings import Finding
from zgen.report.context import ReportContext

__all__ = ["render_json", "finding_json"]


def finding_json(f: Finding, ctx: ReportContext) -> dict:
    """One finding in ruff's JSON shape, plus zgen's `severity`, `help`, `key` and `source`."""
    return {
        "cell": None,
        "code": f.code,
        "end_location": {"column": f.end_column, "row": f.end_line},
        "filename": str(Path(f.path).absolute()),
        "fix": f.fix.to_dict() if f.fix else None,
        "help": f.help,
        "key": f.key or None,
        "location": {"column": f.column, "row": f.line},
        "message": f.message,
        "noqa_row": f.line,
        "severity": f.severity.value,
        "source": f.source.value,
        "url": None,
    }


def render_json(findings: list[Finding], ctx: ReportContext) -> str:
    return json.dumps([finding_json(f, ctx) for f in findings], indent=2, sort_keys=True) + "\n"
