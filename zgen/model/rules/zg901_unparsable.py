"""ZG901: a file that does not parse."""

from __future__ import annotations

import sys
from collections.abc import Iterator

from zgen.findings import Finding

from ..program.index import ModelIndex
from ..program.skeleton import SourceError
from .rule import Report, Rule


class Unparsable(Rule):
    """The file is not valid Python, so no other rule could check it.

    ## What it does
    Reports a Python file that does not parse, at the position of the
    syntax error, instead of stopping the whole run. zgen parses with the
    Python it runs on, so syntax newer than that interpreter also lands here.
    A file that cannot be read (permissions, a broken link) or decoded is
    reported the same way, at line 1; the other files are still checked
    and the run exits 1, as for any finding (exit 2 is kept for runs zgen
    could not do at all: a bad setting, a path that does not exist).

    ## Why is this bad under ZeRO-3?
    It is not a ZeRO-3 hazard itself, but every other check of the file is
    skipped until it parses, so its hazards stay unreported.

    ## Example
    ```python
    def forward(self, x:
        return x
    ```

    ## Use instead
    ```python
    def forward(self, x):
        return x
    ```
    """

    code = "ZG901"
    name = "unparsable-file"

    VALID = ("x = 1\n",)
    INVALID = ("def forward(self, x:\n    return x\n", "class A:\n\tif x:\n        pass\n")

    def check(self, index: ModelIndex) -> Iterator[Report]:
        return iter(())  # reported by the checker before any index exists

    @classmethod
    def from_error(cls, path: str, error: SourceError) -> Finding:
        version = f"{sys.version_info.major}.{sys.version_info.minor}"
        return Finding(
            code=cls.code,
            message=f"the file does not parse with Python {version}: `{error.message}`",
            path=path,
            line=error.line,
            column=error.column,
            end_line=error.line,
            end_column=error.column + 1,
            severity=cls.severity,
            help="fix the syntax error; zgen checks nothing else in this file until it parses",
        )
