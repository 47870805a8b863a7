"""Which rule codes run: `select` / `extend-select` / `ignore` by code or prefix, and per-file ignores.

As in ruff, the more specific selector wins: with `select = ["ZG"]` and
`ignore = ["ZG2"]`, `extend-select = ["ZG201"]` turns ZG201 back on. When a
code is matched equally specifically by both, ignoring wins.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

from zgen.errors import ZgenError
from zgen.settings import suggest

__all__ = ["Selection", "validate_selectors"]


def _best(code: str, prefixes: Iterable[str]) -> int:
    """Length of the longest prefix in `prefixes` that `code` starts with (-1 when none)."""
    best = -1
    for p in prefixes:
        if p == "ALL":
            best = max(best, 0)
        elif code.startswith(p):
            best = max(best, len(p))
    return best


def validate_selectors(selectors: Iterable[str], known: set[str], where: str) -> None:
    """Raise ZgenError for a selector that matches no known code (a typo would silently select nothing)."""
    for s in selectors:
        if s == "ALL" or any(c.startswith(s) for c in known):
            continue
        raise ZgenError(
            f"{where}: `{s}` matches no zgen rule{suggest(s, known)}",
            help="use a rule code or prefix such as ZG2 or ZC1; `zgen rule --all` lists them",
        )


@dataclass(frozen=True, slots=True)
class Selection:
    """The resolved selectors; `enabled(code)` and `enabled_for(path, code)` answer per code."""

    select: tuple[str, ...]
    ignore: tuple[str, ...]
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def enabled(self, code: str) -> bool:
        s = _best(code, self.select)
        return s >= 0 and s > _best(code, self.ignore)

    def enabled_for(self, path: str, code: str) -> bool:
        if not self.enabled(code):
            return False
        for glob, codes in self.per_file_ignores:
            if _matches(path, glob) and _best(code, codes) >= 0:
                return False
        return True

    def enabled_codes(self, known: Iterable[str]) -> frozenset[str]:
        return frozenset(c for c in known if self.enabled(c))

    def key(self) -> str:
        """A stable string for cache keys."""
        return f"s={','.join(sorted(self.select))};i={','.join(sorted(self.ignore))}"


def _matches(path: str, glob: str) -> bool:
    p = PurePosixPath(path)
    if fnmatch.fnmatch(path, glob) or fnmatch.fnmatch(p.name, glob):
        return True
    # `tests/**` style globs: match any suffix of the path too.
    parts = p.parts
    return any(fnmatch.fnmatch("/".join(parts[i:]), glob) for i in range(1, len(parts)))
