r"""The text pre-filter: what a piece of code must contain before it is worth parsing.

Most methods of a large file never reach libcst: an analysis or a rule first
asks whether the method's text holds the tokens it cannot work without.

Patterns run over whole files and methods are written word first. `re` skips
straight to the places where a pattern's leading literal (or, for an
alternation, the first character of each alternative) occurs; a pattern that
starts with `\b` or a look-behind is instead tried at every position, each
try asking Unicode's tables whether the characters around are word characters
(tens of times slower over a model file). So `\bsetattr\(` is written
`setattr(?<!\wsetattr)\(`, and `(?<![\w.])torch\.` is `torch(?<![\w.]torch)\.`:
the same matches, the literal first. A pattern that must start with a word
of any spelling (`(?<![\w.])(\w+)\.(\w+)\s*\(`) takes it whole, `\w++`, when
what follows cannot start with a word character: the word can only end
there, and `re` no longer tries each shorter prefix of every word.

A MULTILINE pattern that opens on `^` has no literal to skip to either: `re` tries it at every position of the
text. Where each of its matches stays on one line and needs a word there, the pattern is matched at the starts of
the lines holding that word alone (`line_matches`); a `Trigger` whose matches are words does the same (`by_line`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Protocol

__all__ = ["Trigger", "Remembered", "word_first", "line_matches", "LOCAL_CONSTRUCTION"]

# `net = nn.Sequential(`, `conv = Conv2d(`: a line binding a local (its name, group 1) to what may be a module's
# construction (a capitalised callee, any dotted prefix).
LOCAL_CONSTRUCTION = re.compile(r"^[ \t]*([a-z_]\w*)[ \t]*=[ \t]*(?:[a-z_]\w*\.)*[A-Z]\w*\(", re.MULTILINE)


def word_first(word: str, not_after: str = r"\w") -> str:
    r"""Regex text matching the literal `word` where no character of the class `not_after` stands before it,
    written word first (see above): `word_first("run")` matches as `\brun` does, `word_first("run", r"[\w.]")`
    as `(?<![\w.])run` (a plain name, not an attribute)."""
    literal = re.escape(word)
    return f"{literal}(?<!{not_after}{literal})"


def line_matches(pattern: re.Pattern[str], text: str, needed: re.Pattern[str] | str) -> Iterator[re.Match[str]]:
    """`pattern.finditer(text)` for a MULTILINE `pattern` that opens on `^` and whose every match stays on one line
    and holds `needed` (a pattern, or a plain string): `pattern` is matched at the starts of the lines holding
    `needed` alone, in order."""
    hits = needed.finditer(text) if isinstance(needed, re.Pattern) else re.finditer(re.escape(needed), text)
    done = -1
    for hit in hits:
        start = text.rfind("\n", 0, hit.start()) + 1
        if start != done:
            done = start
            match = pattern.match(text, start)
            if match is not None:
                yield match


class Trigger:
    """Text without which a rule cannot fire in a piece of code: the pre-filter before parsing.

    `literals` are plain substrings (fast C search); the optional `pattern`
    refines a hit. `search(text)` is true when some literal occurs and the
    pattern (if any) matches. `by_line`: every match of the pattern stays on
    one line and holds one of the literals (a name of a word list), so it is
    searched in the lines holding a literal alone, not the whole text (a
    pattern that opens on a look-behind is tried at every position).
    """

    def __init__(self, *literals: str, pattern: str | None = None, by_line: bool = False) -> None:
        self.literals = literals
        self.pattern = re.compile(pattern) if pattern else None
        self.by_line = by_line
        # What is looked for: a literal holding another one (`get_rank`, `rank`) is found wherever that one is
        self._needles = tuple(dict.fromkeys(w for w in literals if not any(o in w and o != w for o in literals)))

    def search(self, text: str) -> bool:
        for literal in self._needles:
            if literal in text:
                if self.pattern is None:
                    return True
                if self.by_line:
                    return any(self.pattern.search(text, start, end) for start, end in self._lines(text))
                return self.pattern.search(text) is not None
        return False

    def _lines(self, text: str) -> Iterator[tuple[int, int]]:
        """(start, end) of each line of `text` holding one of the literals, each once."""
        done: set[int] = set()
        for literal in self._needles:
            at = text.find(literal)
            while at >= 0:
                start = text.rfind("\n", 0, at) + 1
                end = text.find("\n", at)
                end = len(text) if end < 0 else end
                if start not in done:
                    done.add(start)
                    yield start, end
                at = text.find(literal, end)


class _Searches(Protocol):
    def search(self, text: str) -> bool: ...


class Remembered:
    """A pre-filter whose answer is kept per text: for costly filters whose texts recur.

    The same method text is asked about by several rules (ZG204's filter asks
    ZG203's first) and, for a method that several classes inherit, once per
    class. `search` must depend on the text alone. The last `size` texts are kept.
    """

    def __init__(self, trigger: _Searches, size: int = 1024) -> None:
        self.trigger = trigger
        self.search = functools.lru_cache(maxsize=size)(trigger.search)
