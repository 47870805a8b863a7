"""What reporters may need besides the findings: rule docs and source text."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from zgen.findings import RuleInfo

__all__ = ["ReportContext"]


@dataclass
class ReportContext:
    """Rule infos by code, and a way to read a file's lines (cached; None when unreadable)."""

    rules: dict[str, RuleInfo] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    version: str = ""
    root: Path | None = None
    _lines: dict[str, list[str] | None] = field(default_factory=dict)
    reader: Callable[[str], str | None] | None = None

    def lines(self, path: str) -> list[str] | None:
        if path not in self._lines:
            text = self.sources.get(path)
            if text is None:
                try:
                    text = Path(path).read_bytes().decode("utf-8", errors="replace")
                except OSError:
                    text = None
            self._lines[path] = None if text is None else text.splitlines()
        return self._lines[path]

    def line(self, path: str, lineno: int) -> str:
        lines = self.lines(path)
        if lines is None or not 1 <= lineno <= len(lines):
            return ""
        return lines[lineno - 1]
