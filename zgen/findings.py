"""The one value every check produces: a `Finding`, and the `RuleInfo` that documents its code.

Model rules (ZG1xx-ZG3xx), config rules (ZCxxx) and meta findings (ZG9xx) all
report through these types, so reporters, suppression, selection and exit codes
never need to know which checker a finding came from.

Coordinates are 1-based (line and column), paths are as given on the command
line (repo-relative in practice). Findings sort by (path, line, column, code).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

__all__ = ["UNREADABLE", "Severity", "Source", "Related", "Edit", "Fix", "Finding", "RuleInfo", "sort_findings",
           "merge_trace_findings"]


# Findings that say a file could not be read as what it is (unreadable, not UTF-8, not parsable): the
# run reports them with everything else, then exits 2, since zgen could not check that file.
UNREADABLE = frozenset({"ZG901", "ZC001", "ZC002", "ZC004", "ZC005"})


class Severity(str, enum.Enum):
    """How bad a finding is. Errors and warnings make `zgen check` exit 1; an info finding is a note that
    is reported but never fails the run (a pre-commit hook must not fail on something that is not wrong)."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Source(str, enum.Enum):
    """Which check saw a finding: the static check read it, the trace check (`zgen check --trace`) saw it
    happen while the model ran, or both did (the static finding, confirmed by the trace)."""

    STATIC = "static"
    TRACE = "trace"
    BOTH = "static+trace"


@dataclass(frozen=True, slots=True, kw_only=True)
class Related:
    """Another location that takes part in a finding (e.g. a second key of a conflict)."""

    path: str
    line: int
    column: int
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Edit:
    """Replace the text from (`line`, `column`) to (`end_line`, `end_column`) (1-based, end exclusive) by `content`."""

    content: str
    line: int
    column: int
    end_line: int
    end_column: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Fix:
    """Edits that resolve a finding. `applicability` is `safe` (`--fix` applies it) or `unsafe` (shown only)."""

    message: str
    edits: tuple[Edit, ...]
    applicability: str = "safe"

    def to_dict(self) -> dict:
        """The ruff-style JSON shape: applicability, message, edits with location/end_location/content."""
        return {
            "applicability": self.applicability,
            "message": self.message,
            "edits": [{"content": e.content, "location": {"row": e.line, "column": e.column},
                       "end_location": {"row": e.end_line, "column": e.end_column}} for e in self.edits],
        }

    @classmethod
    def from_dict(cls, d: dict) -> Fix:
        return cls(message=d["message"], applicability=d["applicability"], edits=tuple(
            Edit(content=e["content"], line=e["location"]["row"], column=e["location"]["column"],
                 end_line=e["end_location"]["row"], end_column=e["end_location"]["column"]) for e in d["edits"]))


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """One problem at one source location.

    `message` states the problem as a fact; `help` says what to do, in the
    imperative. `end_line`/`end_column` delimit the span (inclusive start,
    exclusive end column, both 1-based). `key` is the dotted JSON key path for
    config findings (`zero_optimization.stage`), empty for source findings.
    """

    code: str
    message: str
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    severity: Severity = Severity.ERROR
    help: str | None = None
    key: str = ""
    related: tuple[Related, ...] = field(default=())
    fix: Fix | None = None
    source: Source = Source.STATIC

    @property
    def family(self) -> str:
        """`ZG1`, `ZG2`, `ZG3`, `ZG9` or `ZC`: the group a code belongs to (trace and static findings
        of one family at one statement are the same hazard)."""
        return self.code[:2] if self.code.startswith("ZC") else self.code[:3]

    def sort_key(self) -> tuple[str, int, int, str, str]:
        return (self.path, self.line, self.column, self.code, self.message)

    def to_dict(self) -> dict:
        """A JSON-ready dict (used by the cache; reporters build their own shapes)."""
        return {
            "code": self.code,
            "message": self.message,
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "severity": self.severity.value,
            "help": self.help,
            "key": self.key,
            "related": [
                {"path": r.path, "line": r.line, "column": r.column, "message": r.message}
                for r in self.related
            ],
            "fix": self.fix.to_dict() if self.fix else None,
            "source": self.source.value,
        }

    @classmethod
    def from_dict(cls, d: dict) -> Finding:
        return cls(
            code=d["code"],
            message=d["message"],
            path=d["path"],
            line=d["line"],
            column=d["column"],
            end_line=d["end_line"],
            end_column=d["end_column"],
            severity=Severity(d["severity"]),
            help=d.get("help"),
            key=d.get("key", ""),
            related=tuple(Related(**r) for r in d.get("related", ())),
            fix=Fix.from_dict(d["fix"]) if d.get("fix") else None,
            source=Source(d.get("source", Source.STATIC.value)),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class RuleInfo:
    """Documentation and defaults of one rule code.

    `doc` is the full markdown documentation (for model rules, the rule class's
    docstring; for config rules, built from the TOML entry). `summary` is its
    first sentence, used as SARIF `shortDescription` and by `zgen rule --all`.
    """

    code: str
    name: str
    summary: str
    doc: str
    severity: Severity = Severity.ERROR
    family: str = ""


def sort_findings(findings) -> list[Finding]:
    """Findings in the one stable order every reporter prints."""
    return sorted(findings, key=Finding.sort_key)


# Trace findings name the line a frame was executing; the static check may name another line of the same
# statement (a call split over lines). Within this many lines, one family's findings are one hazard.
_SAME_STATEMENT_LINES = 3

TRACE_CONFIRMED = " (confirmed by the trace)"
TRACE_SEEN = " (seen by the trace)"


def merge_trace_findings(static: list[Finding], trace: list[Finding]) -> list[Finding]:
    """One report from both checks: a hazard found by both is reported once, as the static finding (its
    code, span and help) marked confirmed; one only the trace saw is kept and says so.

    Two findings are the same hazard when they are in one family, in one file, and the trace's statement
    (its span: a trace finding names a whole statement, which may run over several lines) meets the static
    finding's span widened by a few lines (a multi-line call is one statement).
    """
    confirmed: set[int] = set()
    extra: list[Finding] = []
    for t in trace:
        match = None
        for i, s in enumerate(static):
            if (s.family == t.family and s.path == t.path
                    and s.line - _SAME_STATEMENT_LINES <= max(t.end_line, t.line)
                    and t.line <= max(s.end_line, s.line) + _SAME_STATEMENT_LINES):
                if match is None or abs(s.line - t.line) < abs(static[match].line - t.line):
                    match = i
        if match is None:
            extra.append(_replace(t, message=t.message + TRACE_SEEN, source=Source.TRACE))
        else:
            confirmed.add(match)
    merged = [(_replace(s, message=s.message + TRACE_CONFIRMED, source=Source.BOTH) if i in confirmed else s)
              for i, s in enumerate(static)]
    # Several trace observations of one statement (a loop runs it many times) are one finding.
    seen: set[tuple[str, str, int]] = set()
    for f in extra:
        key = (f.family, f.path, f.line)
        if key not in seen:
            seen.add(key)
            merged.append(f)
    return sort_findings(merged)


def _replace(f: Finding, **changes) -> Finding:
    from dataclasses import replace

    return replace(f, **changes)
