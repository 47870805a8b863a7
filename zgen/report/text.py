"""Human formats: `concise` (one line per finding) and `full` (code frame and help)."""

from __future__ import annotations

from collections import Counter

from zgen.findings import Finding, Severity
from zgen.report.context import ReportContext

__all__ = ["render_concise", "render_full", "summary_line"]


def _head(f: Finding) -> str:
    return f"{f.path}:{f.line}:{f.column}: {f.code} {f.message}"


def summary_line(findings: list[Finding]) -> str:
    """`Found 3 findings (2 errors, 1 warning).` or `No findings.`"""
    if not findings:
        return "No findings."
    by = Counter(f.severity for f in findings)
    parts = [
        f"{by[s]} {s.value}{'s' if by[s] != 1 else ''}"
        for s in (Severity.ERROR, Severity.WARNING, Severity.INFO)
        if by[s]
    ]
    n = len(findings)
    return f"Found {n} finding{'s' if n != 1 else ''} ({', '.join(parts)})."


def render_concise(findings: list[Finding], ctx: ReportContext) -> str:
    out = [_head(f) for f in findings]
    out.append(summary_line(findings))
    return "\n".join(out) + "\n"


def render_full(findings: list[Finding], ctx: ReportContext) -> str:
    out: list[str] = []
    for f in findings:
        out.append(f"{_head(f)}")
        out.extend(_frame(f, ctx))
        for r in f.related:
            out.append(f"  = note: {r.path}:{r.line}:{r.column}: {r.message}")
        if f.help:
            out.append(f"  = help: {f.help}")
        out.append("")
    out.append(summary_line(findings))
    return "\n".join(out) + "\n"


def _frame(f: Finding, ctx: ReportContext) -> list[str]:
    """A ruff-style code frame: one line of context above, the span underlined with carets."""
    lines = ctx.lines(f.path)
    if not lines or not 1 <= f.line <= len(lines):
        return []
    first = max(1, f.line - 1)
    last = min(len(lines), f.end_line if f.end_line >= f.line else f.line, f.line + 4)
    width = len(str(last))
    pad = " " * width
    out = [f"{pad} |"]
    for n in range(first, last + 1):
        text = lines[n - 1].expandtabs(4).rstrip()
        out.append(f"{n:>{width}} | {text}")
        if f.line <= n <= max(f.line, f.end_line):
            src = lines[n - 1]
            start = f.column if n == f.line else len(src) - len(src.lstrip()) + 1
            end = f.end_column if n == f.end_line else len(src.rstrip()) + 1
            start_vis = len(src[: start - 1].expandtabs(4))
            end_vis = max(start_vis + 1, len(src[: max(end - 1, 0)].expandtabs(4)))
            marker = " " * start_vis + "^" * (end_vis - start_vis)
            if n == max(f.line, min(f.end_line, last)):
                marker += f" {f.code}"
            out.append(f"{pad} | {marker}")
    out.append(f"{pad} |")
    return out
