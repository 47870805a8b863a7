"""SARIF 2.1.0 for GitHub code scanning and other SARIF consumers.

Every rule zgen knows is listed with its short and full description (from the
one docstring or TOML entry that documents it). Each result carries a full
region and a `partialFingerprints` entry that survives lines moving: it hashes
the code, the file, the message and the stripped text of the line, plus an
occurrence counter for identical tuples. Whether the trace saw or confirmed a
finding is a result property, kept out of the fingerprint, so a finding keeps
its identity between `zgen check` and `zgen check --trace`.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from urllib.parse import quote

from zgen.findings import TRACE_CONFIRMED, TRACE_SEEN, Finding, Severity, Source
from zgen.report.context import ReportContext

__all__ = ["render_sarif"]

_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _uri(path: str) -> str:
    return quote(Path(path).as_posix())


def _region(line: int, column: int, end_line: int, end_column: int) -> dict:
    end_line = max(end_line, line)
    if end_line == line:
        end_column = max(end_column, column + 1)
    return {"startLine": line, "startColumn": column, "endLine": end_line, "endColumn": end_column}


def _fingerprint(f: Finding, ctx: ReportContext, seen: Counter) -> str:
    text = " ".join(ctx.line(f.path, f.line).split())
    message = f.message.removesuffix(TRACE_CONFIRMED).removesuffix(TRACE_SEEN)
    base = f"{f.code}\0{f.path}\0{message}\0{text}"
    seen[base] += 1
    return hashlib.sha256(f"{base}\0{seen[base]}".encode()).hexdigest()[:32] + ":" + str(seen[base])


def render_sarif(findings: list[Finding], ctx: ReportContext) -> str:
    codes = sorted(ctx.rules)
    index = {c: i for i, c in enumerate(codes)}
    rules = []
    for code in codes:
        r = ctx.rules[code]
        rules.append({
            "id": code,
            "name": r.name,
            "shortDescription": {"text": r.summary},
            "fullDescription": {"text": r.doc.strip() or r.summary},
            "help": {"text": r.doc.strip() or r.summary, "markdown": r.doc.strip() or r.summary},
            "defaultConfiguration": {"level": _LEVEL[r.severity]},
            "properties": {"tags": [t for t in ("zero3", r.family) if t]},
        })
    seen: Counter = Counter()
    results = []
    for f in findings:
        message = f.message if not f.help else f"{f.message}\nhelp: {f.help}"
        result = {
            "ruleId": f.code,
            "level": _LEVEL[f.severity],
            "message": {"text": message},
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": {"uri": _uri(f.path), "uriBaseId": "%SRCROOT%"},
                    "region": _region(f.line, f.column, f.end_line, f.end_column),
                }
            }],
            "partialFingerprints": {"zgenFingerprint/v1": _fingerprint(f, ctx, seen)},
        }
        if f.code in index:
            result["ruleIndex"] = index[f.code]
        if f.source is not Source.STATIC:
            result["properties"] = {"source": f.source.value}
        if f.related:
            result["relatedLocations"] = [
                {
                    "id": i,
                    "message": {"text": r.message},
                    "physicalLocation": {
                        "artifactLocation": {"uri": _uri(r.path), "uriBaseId": "%SRCROOT%"},
                        "region": _region(r.line, r.column, r.line, r.column + 1),
                    },
                }
                for i, r in enumerate(f.related, 1)
            ]
        if f.fix is not None:
            # SARIF's fix object: one artifactChange per file, a replacement per edit (regions are 1-based).
            result["fixes"] = [{
                "description": {"text": f.fix.message},
                "artifactChanges": [{
                    "artifactLocation": {"uri": _uri(f.path), "uriBaseId": "%SRCROOT%"},
                    "replacements": [{"deletedRegion": {"startLine": e.line, "startColumn": e.column,
                                                        "endLine": e.end_line, "endColumn": e.end_column},
                                      "insertedContent": {"text": e.content}} for e in f.fix.edits],
                }],
            }]
            result["properties"] = {"fixApplicability": f.fix.applicability}
        results.append(result)
    root = (ctx.root or Path.cwd()).resolve().as_uri().rstrip("/") + "/"
    doc = {
        "$schema": _SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "zgen",
                "version": ctx.version,
                "semanticVersion": ctx.version,
                "rules": rules,
            }},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": root}},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }
    return json.dumps(doc, indent=2) + "\n"
