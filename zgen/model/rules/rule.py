"""The base class of every model rule.

A rule is a class whose docstring is its documentation (first line: the
summary; then the sections `## What it does`, `## Why is this bad under
ZeRO-3?`, `## Example`, `## Use instead`), with `VALID` and `INVALID` code
examples that one test harness runs. `check` reads a `ModelIndex` and yields
findings; it never prints, imports user code or raises on odd input.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

from zgen.findings import Finding, RuleInfo, Severity

from ..program.index import ModelIndex
from ..program.tree import Snippet, cst

__all__ = ["Rule", "Report"]

# How far down a finding reaches to the node it governs: farther, the decision alone is shown (a long loop's
# body is no help to read, and a snippet of it would cover unrelated lines).
_REACH_LINES = 12


@dataclass(frozen=True, slots=True)
class Report:
    """A finding whose position is not computed yet: the checker locates all reports of a snippet at once."""

    rule: Rule
    path: str
    snippet: Snippet
    node: cst.CSTNode
    message: str
    help: str
    through: cst.CSTNode | None = None  # a later node the finding reaches down to (the call a decision governs)

    def to_finding(self) -> Finding:
        line, column, end_line, end_column = self.snippet.span(self.node)
        if self.through is not None:
            _l, _c, last_line, last_column = self.snippet.span(self.through)
            if (last_line, last_column) > (end_line, end_column) and last_line - line <= _REACH_LINES:
                end_line, end_column = last_line, last_column
        return Finding(
            code=self.rule.code,
            message=self.message,
            path=self.path,
            line=line,
            column=column,
            end_line=end_line,
            end_column=end_column,
            severity=self.rule.severity,
            help=self.help,
        )


class Rule:
    """Base class: subclasses set `code`, `name`, `severity`, examples, and implement `check`."""

    code: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[Severity] = Severity.ERROR
    VALID: ClassVar[tuple[str, ...]] = ()
    INVALID: ClassVar[tuple[str, ...]] = ()

    def check(self, index: ModelIndex) -> Iterator[Report]:
        raise NotImplementedError

    def finding(self, index: ModelIndex, snippet: Snippet, node: cst.CSTNode, message: str, help: str,
                through: cst.CSTNode | None = None) -> Report:
        """A finding of this rule at `node` (the node a user would put `# noqa` on), reaching down to `through` when
        that comes later (a divergent decision and the submodule call it governs: both lines are the hazard)."""
        return Report(self, index.path, snippet, node, message, help, through)

    @classmethod
    def doc(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def info(cls) -> RuleInfo:
        doc = cls.doc()
        return RuleInfo(
            code=cls.code,
            name=cls.name,
            summary=doc.split("\n", 1)[0].strip(),
            doc=doc,
            severity=cls.severity,
            family=cls.code[:3] + "xx",
        )
