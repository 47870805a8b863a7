"""`# noqa: ZG201` suppression comments, and the findings about the comments themselves.

Only comments that name codes count: a bare `# noqa` (written for flake8 or
ruff) never hides a zgen finding. A directive on a line suppresses the listed
codes for findings that start on that line. Codes of other tools (`E501`) in
the same comment are left alone. zgen reports its own codes that suppressed
nothing (ZG902) and codes it does not know (ZG903).
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass

from zgen.findings import Finding, RuleInfo, Severity

__all__ = ["Directive", "parse_directives", "apply_noqa", "META_RULES", "ZGEN_CODE"]

ZGEN_CODE = re.compile(r"^Z[GC]\d{3}$")
_NOQA = re.compile(r"#\s*noqa\s*:\s*(?P<codes>[A-Za-z]+[0-9]+(?:\s*,?\s*[A-Za-z]+[0-9]+)*)", re.I)
_CODE = re.compile(r"[A-Za-z]+[0-9]+")


@dataclass(frozen=True, slots=True)
class Directive:
    """One `# noqa: ...` comment: its line, the column of `#`, and the zgen codes it names."""

    line: int
    column: int
    codes: tuple[str, ...]


def parse_directives(source: str) -> list[Directive]:
    """All noqa directives naming at least one zgen-style code (`ZG...`/`ZC...`), from real comments only."""
    if "noqa" not in source and "NOQA" not in source:
        return []
    # Tokenizing is the slow part, and most `# noqa` comments are other tools' (`# noqa: E501`): a comment's
    # match is a match in the whole text with at least its codes, so a text naming no zgen code has no directive.
    if not any(_zgen_codes(m) for m in _NOQA.finditer(source)):
        return []
    out: list[Directive] = []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        tokens = _comment_tokens_fallback(source)
    for tok in tokens:
        if tok.type != tokenize.COMMENT:
            continue
        m = _NOQA.search(tok.string)
        if not m:
            continue
        codes = _zgen_codes(m)
        if codes:
            out.append(Directive(tok.start[0], tok.start[1] + m.start() + 1, codes))
    return out


def _zgen_codes(match: re.Match[str]) -> tuple[str, ...]:
    return tuple(c.upper() for c in _CODE.findall(match.group("codes")) if c.upper().startswith(("ZG", "ZC")))


def _comment_tokens_fallback(source: str) -> list[tokenize.TokenInfo]:
    # A file that does not tokenize still gets its obvious `# noqa` comments honoured.
    toks = []
    for i, line in enumerate(source.splitlines(), 1):
        j = line.find("#")
        if j >= 0:
            toks.append(tokenize.TokenInfo(tokenize.COMMENT, line[j:], (i, j), (i, len(line)), line))
    return toks


META_RULES = (
    RuleInfo(
        code="ZG902",
        name="unused-noqa",
        severity=Severity.WARNING,
        family="meta",
        summary="A `# noqa` directive names a zgen code that it does not suppress.",
        doc="""## What it does
Reports a zgen code in a `# noqa: ...` comment when no finding with that code starts on that line.

## Why is this bad?
A stale suppression hides the next real problem on that line, and tells readers
the line is hazardous when it no longer is.

## Example
```python
n = x.shape[0]  # noqa: ZG101
```

## Use instead
Remove the code from the comment (or the comment, if nothing is left).
""",
    ),
    RuleInfo(
        code="ZG903",
        name="unknown-noqa-code",
        severity=Severity.WARNING,
        family="meta",
        summary="A `# noqa` directive names a zgen-style code that zgen does not define.",
        doc="""## What it does
Reports codes such as `ZG999` in a `# noqa: ...` comment that are not zgen rules.

## Why is this bad?
A typo in a suppression suppresses nothing; the finding it was meant for still
fires, or the comment is dead.

## Use instead
Use `zgen rule --all` to find the right code.
""",
    ),
)


def apply_noqa(
    path: str,
    source: str,
    findings: Iterable[Finding],
    known_codes: set[str],
    enabled,
) -> list[Finding]:
    """Drop findings suppressed by a directive on their first line; add ZG902/ZG903 findings.

    `enabled(code) -> bool` says whether a code is selected; a directive for a
    code that is not selected is not reported as unused (the rule did not run).
    """
    directives = parse_directives(source)
    findings = list(findings)
    if not directives:
        return findings
    by_line = {d.line: d for d in directives}
    used: set[tuple[int, str]] = set()
    kept = []
    for f in findings:
        d = by_line.get(f.line)
        if d is not None and f.code in d.codes:
            used.add((d.line, f.code))
            continue
        kept.append(f)
    for d in directives:
        for code in d.codes:
            if code not in known_codes:
                if enabled("ZG903"):
                    kept.append(_meta(path, d, "ZG903", f"`# noqa` names `{code}`, which is not a zgen rule",
                                      "fix the code or remove it; `zgen rule --all` lists the codes"))
            elif (d.line, code) not in used and enabled(code) and enabled("ZG902") and "ZG902" not in d.codes:
                kept.append(_meta(path, d, "ZG902", f"unused `noqa` directive for `{code}`",
                                  f"remove `{code}` from the comment: nothing on this line triggers it"))
    return kept


def _meta(path: str, d: Directive, code: str, message: str, help: str) -> Finding:
    return Finding(
        code=code, message=message, path=path, line=d.line, column=d.column,
        end_line=d.line, end_column=d.column + 1, severity=Severity.WARNING, help=help,
    )
