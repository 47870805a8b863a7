"""GitHub Actions workflow commands: one `::error file=...::message` annotation per finding."""

from __future__ import annotations

from zgen.findings import Finding, Severity
from zgen.report.context import ReportContext

__all__ = ["render_github"]

_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def _data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(s: str) -> str:
    return _data(s).replace(":", "%3A").replace(",", "%2C")


def render_github(findings: list[Finding], ctx: ReportContext) -> str:
    out = []
    for f in findings:
        props = (
            f"file={_prop(f.path)},line={f.line},col={f.column},"
            f"endLine={f.end_line},endColumn={f.end_column},title={_prop(f'zgen ({f.code})')}"
        )
        text = f"{f.path}:{f.line}:{f.column}: {f.code} {f.message}"
        if f.help:
            text += f"\nhelp: {f.help}"
        out.append(f"::{_LEVEL[f.severity]} {props}::{_data(text)}")
    return "\n".join(out) + ("\n" if out else "")
