"""The text pre-filter: what a piece of code must contain before it is worth parsing.

Most methods of a large file never reach libcst: an analysis or a rule first
asks whether the method's text holds the tokens it cannot work without.
"""

from __future__ import annotations

import re

__all__ = ["Trigger"]


class Trigger:
    """Text without which a rule cannot fire in a piece of code: the pre-filter before parsing.

    `literals` are plain substrings (fast C search); the optional `pattern`
    refines a hit. `search(text)` is true when some literal occurs and the
    pattern (if any) matches.
    """

    def __init__(self, *literals: str, pattern: str | None = None) -> None:
        self.literals = literals
        self.pattern = re.compile(pattern) if pattern else None

    def search(self, text: str) -> bool:
        for literal in self.literals:
            if literal in text:
                return self.pattern is None or self.pattern.search(text) is not None
        return False
