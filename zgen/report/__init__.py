"""Reporters: one function per output format, each turning sorted findings into text.

Every reporter has the same signature, `render(findings, ctx) -> str`, and
prints nothing itself; the CLI writes the returned text. Same findings, same
bytes out.
"""

from __future__ import annotations

from zgen.report.context import ReportContext

__all__ = ["FORMATS", "render", "ReportContext"]

FORMATS = ("full", "concise", "json", "sarif", "github")


def render(fmt: str, findings, ctx: ReportContext) -> str:
    """Render `findings` (already sorted) in `fmt`, one of `FORMATS`."""
    if fmt in ("full", "concise"):
        from zgen.report.text import render_concise, render_full

        return (render_full if fmt == "full" else render_concise)(findings, ctx)
    if fmt == "json":
        from zgen.report.json_report import render_json

        return render_json(findings, ctx)
    if fmt == "sarif":
        from zgen.report.sarif import render_sarif

        return render_sarif(findings, ctx)
    if fmt == "github":
        from zgen.report.github import render_github

        return render_github(findings, ctx)
    raise ValueError(f"unknown output format {fmt!r}")
