"""Parse DeepSpeed config text the way DeepSpeed does (hjson), keeping the position of every key.

DeepSpeed reads a config file with `hjson.load(..., object_pairs_hook=<reject
duplicates>)`, so a config may carry comments (`#`, `//`, `/* */`), unquoted
keys, quoteless string values, optional commas, single-quoted and `'''`
multi-line strings, and a root object without braces. This module accepts
exactly that language, reproduces hjson's value conversions (a number written
with a fraction or exponent whose value is integral and below 1e10 becomes an
int: `5e7` is the int 50000000), and records a `Span` for every key and value.

It never raises on bad text: `parse()` returns a `Parsed` with either a tree or
a `SyntaxProblem` saying where and what went wrong. Duplicate keys are kept
(last one wins, as in a dict) and listed, since DeepSpeed rejects them.
"""

from __future__ import annotations

import bisect
import math
import re
from dataclasses import dataclass, field

__all__ = ["Span", "Node", "Entry", "Duplicate", "SyntaxProblem", "Parsed", "parse", "to_plain", "MAX_DEPTH"]

# Deeper nesting than this is certainly not a DeepSpeed config; hjson itself
# dies with RecursionError somewhere near Python's recursion limit.
MAX_DEPTH = 64

_WHITESPACE = " \t\n\r"
_PUNCTUATORS = "{}[],:"
_NUMBER = re.compile(r"[\t ]*(-?(?:0|[1-9]\d*))(\.\d+)?([eE][-+]?\d+)?[\t ]*")
_ESCAPES = {'"': '"', "'": "'", "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


@dataclass(frozen=True, slots=True)
class Span:
    """A 1-based source range; `end_column` is exclusive."""

    line: int
    column: int
    end_line: int
    end_column: int


@dataclass(frozen=True, slots=True)
class Entry:
    """One `key: value` pair of an object, with the span of the key token."""

    key: str
    key_span: Span
    value: Node


@dataclass(frozen=True, slots=True)
class Node:
    """A parsed value. `kind` is object, array, string, number, bool or null.

    `value` holds the Python scalar for scalars (int/float/str/bool/None);
    objects keep their pairs in `entries` (in file order, duplicates
    included), arrays their elements in `items`.
    """

    kind: str
    span: Span
    value: object = None
    entries: tuple[Entry, ...] = ()
    items: tuple[Node, ...] = ()

    def get(self, key: str) -> Entry | None:
        """The last entry named `key` (the one a dict would keep)."""
        for entry in reversed(self.entries):
            if entry.key == key:
                return entry
        return None


@dataclass(frozen=True, slots=True)
class Duplicate:
    """A key written twice in one object: `first` is the earlier occurrence."""

    path: str
    first: Span
    second: Span


@dataclass(frozen=True, slots=True)
class SyntaxProblem:
    """Why the text is not a config, and where (`too_deep`/`overflow` pick the finding code)."""
    message: str
    span: Span
    too_deep: bool = False
    overflow: bool = False


@dataclass(frozen=True, slots=True)
class Parsed:
    """The parse result: a tree, or the problem that stopped the parser; duplicates either way."""
    root: Node | None
    problem: SyntaxProblem | None = None
    duplicates: tuple[Duplicate, ...] = ()


class _Fail(Exception):
    """A syntax error. `fatal` errors are ones where hjson crashes instead of
    backtracking, so a braceless root does not get its second chance."""

    def __init__(self, message: str, offset: int, *, too_deep: bool = False, fatal: bool = False, overflow: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.too_deep = too_deep
        self.overflow = overflow
        self.fatal = fatal or too_deep or overflow


@dataclass
class _Scanner:
    text: str
    line_starts: list[int] = field(default_factory=list)
    duplicates: list[Duplicate] = field(default_factory=list)
    # Quoteless strings that swallowed a closing bracket: the likely cause of a later "missing }".
    swallowed: list[tuple[int, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.line_starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", self.text)]

    # -- positions --------------------------------------------------------
    def position(self, offset: int) -> tuple[int, int]:
        index = bisect.bisect_right(self.line_starts, offset) - 1
        return index + 1, offset - self.line_starts[index] + 1

    def span(self, start: int, end: int) -> Span:
        line, column = self.position(start)
        end_line, end_column = self.position(max(end, start))
        return Span(line, column, end_line, end_column)

    # -- lexical helpers (hjson semantics) ---------------------------------
    def char(self, i: int) -> str:
        return self.text[i : i + 1]

    def skip(self, i: int) -> int:
        """Skip whitespace and comments; return the index of the next significant char."""
        s = self.text
        while True:
            while self.char(i) != "" and self.char(i) in _WHITESPACE:
                i += 1
            ch, nxt = self.char(i), self.char(i + 1)
            if ch == "#" or (ch == "/" and nxt == "/"):
                i = self.end_of_line(i)
            elif ch == "/" and nxt == "*":
                close = s.find("*/", i + 2)
                if close < 0:
                    raise _Fail("unterminated `/*` comment", i, fatal=True)
                i = close + 2
            else:
                return i

    def end_of_line(self, i: int) -> int:
        while self.char(i) not in ("\r", "\n", ""):
            i += 1
        return i

    # -- values -----------------------------------------------------------
    def value(self, i: int, path: str, depth: int) -> tuple[Node, int]:
        if depth > MAX_DEPTH:
            raise _Fail(f"nesting deeper than {MAX_DEPTH} levels", i, too_deep=True)
        ch = self.char(i)
        if ch == "":
            raise _Fail("expected a value, found the end of the file", i)
        if ch in "\"'":
            if self.text.startswith("'''", i):
                text, end = self.multiline(i)
            else:
                text, end = self.string(i)
            return Node("string", self.span(i, end), text), end
        if ch == "{":
            return self.obj(i + 1, i, path, depth + 1, braces=True)
        if ch == "[":
            return self.array(i + 1, i, path, depth + 1)
        return self.bare(i)

    def obj(self, i: int, start: int, path: str, depth: int, braces: bool) -> tuple[Node, int]:
        entries: list[Entry] = []
        seen: dict[str, Span] = {}
        i = self.skip(i)
        if braces and self.char(i) == "}":
            return Node("object", self.span(start, i + 1)), i + 1
        while True:
            key, key_start, i = self.key(i)
            key_span = self.span(key_start, i)
            i = self.skip(i)
            if self.char(i) != ":":
                raise _Fail(f"expected `:` after key `{key}`", i)
            i = self.skip(i + 1)
            child_path = f"{path}.{key}" if path else key
            value, i = self.value(i, child_path, depth)
            if key in seen:
                self.duplicates.append(Duplicate(child_path, seen[key], key_span))
            seen[key] = key_span
            entries.append(Entry(key, key_span, value))
            i = self.skip(i)
            if self.char(i) == ",":
                i = self.skip(i + 1)
            if not braces:
                if self.char(i) == "":
                    break
            elif self.char(i) == "}":
                i += 1
                break
            i = self.skip(i)
        return Node("object", self.span(start, i), entries=tuple(entries)), i

    def array(self, i: int, start: int, path: str, depth: int) -> tuple[Node, int]:
        items: list[Node] = []
        i = self.skip(i)
        if self.char(i) == "]":
            return Node("array", self.span(start, i + 1)), i + 1
        if self.char(i) == "":
            raise _Fail("unterminated array: missing `]`", start)
        while True:
            item, i = self.value(i, f"{path}[{len(items)}]", depth)
            items.append(item)
            i = self.skip(i)
            if self.char(i) == ",":
                i = self.skip(i + 1)
            if self.char(i) == "]":
                i += 1
                break
            i = self.skip(i)
        return Node("array", self.span(start, i), items=tuple(items)), i

    def key(self, i: int) -> tuple[str, int, int]:
        """Scan a key name; returns (key, start offset, offset after the key)."""
        i = self.skip(i)
        ch = self.char(i)
        if ch in ("\"", "'") and ch != "":
            text, end = self.string(i)
            return text, i, end
        start, space = i, -1
        while True:
            ch = self.char(i)
            if ch == "":
                raise _Fail("unexpected end of file where a key was expected (missing `}`?)", i)
            if ch == ":":
                if i == start:
                    raise _Fail("found `:` without a key name", start)
                if space >= 0:
                    if space != i - 1:
                        raise _Fail("whitespace inside an unquoted key name (quote the key)", space)
                    return self.text[start:i].rstrip(), start, len(self.text[start:i].rstrip()) + start
                return self.text[start:i], start, i
            if ch in _WHITESPACE:
                if space < 0 or space == i - 1:
                    space = i
            elif ch in "{}[],":
                raise _Fail(f"found `{ch}` where a key name was expected", start)
            i += 1

    def string(self, i: int) -> tuple[str, int]:
        """A "..." or '...' string starting at i; returns (text, offset after the quote)."""
        s, quote, begin = self.text, self.text[i], i
        i += 1
        chunks: list[str] = []
        while True:
            ch = self.char(i)
            if ch == "":
                raise _Fail("unterminated string", begin)
            if ch == quote:
                return "".join(chunks), i + 1
            if ch == "\\":
                esc = self.char(i + 1)
                if esc == "":
                    raise _Fail("unterminated string", begin)
                if esc != "u":
                    if esc not in _ESCAPES:
                        raise _Fail(f"invalid escape `\\{esc}` in string", i)
                    chunks.append(_ESCAPES[esc])
                    i += 2
                    continue
                code, i = self.unicode_escape(i)
                chunks.append(code)
                continue
            if ord(ch) < 0x20:
                raise _Fail("control character inside a string (escape it)", i)
            chunks.append(ch)
            i += 1
        return s  # unreachable

    def unicode_escape(self, i: int) -> tuple[str, int]:
        s = self.text
        digits = s[i + 2 : i + 6]
        code = _hex(digits) if digits[1:2] not in ("x", "X") else None
        if code is None:
            raise _Fail("invalid `\\uXXXX` escape", i)
        i += 6
        if code & 0xFC00 == 0xD800 and s[i : i + 2] == "\\u":
            low = s[i + 2 : i + 6]
            if len(low) == 4 and low[1:2] not in ("x", "X"):
                low_code = _hex(low)
                if low_code is None:
                    raise _Fail("invalid `\\uXXXX` escape", i)
                if low_code & 0xFC00 == 0xDC00:
                    code = 0x10000 + (((code - 0xD800) << 10) | (low_code - 0xDC00))
                    i += 6
        return chr(code), i

    def multiline(self, i: int) -> tuple[str, int]:
        """A '''...''' string: indentation up to the opening quotes' column is removed."""
        s, begin = self.text, i
        indent = 0
        try:
            while s[i - indent - 1] != "\n":
                indent += 1
        except IndexError:
            raise _Fail("a `'''` string must start on its own line", begin, fatal=True) from None
        i = self.skip_indent(i + 3, -1)
        if self.char(i) == "":
            raise _Fail("unterminated `'''` string", begin, fatal=True)
        if self.char(i) == "\n":
            i = self.skip_indent(i + 1, indent)
        out: list[str] = []
        quotes = 0
        while True:
            ch = self.char(i)
            if ch == "":
                raise _Fail("unterminated `'''` string", begin)
            if ch == "'":
                quotes += 1
                i += 1
                if quotes == 3:
                    text = "".join(out)
                    return (text[:-1] if text.endswith("\n") else text), i
                continue
            out.append("'" * quotes)
            quotes = 0
            if ch == "\n":
                out.append(ch)
                i = self.skip_indent(i + 1, indent)
            else:
                if ch != "\r":
                    out.append(ch)
                i += 1

    def skip_indent(self, i: int, n: int) -> int:
        while self.char(i) != "" and self.char(i) in " \t\r" and n != 0:
            i += 1
            n -= 1
        return i

    def bare(self, i: int) -> tuple[Node, int]:
        """A quoteless value: true/false/null, a number, or a string running to the end of the line."""
        s = self.text
        i = self.skip(i)
        begin = i
        first = self.char(i)
        if first in _PUNCTUATORS:
            raise _Fail(f"found `{first}` where a value was expected", i)
        while True:
            ch = self.char(i)
            eol = ch in ("\r", "\n", "")
            if eol or ch in ",}]#" or (ch == "/" and self.char(i + 1) in ("/", "*")):
                word = s[begin:i].strip()
                if word == "null":
                    return Node("null", self.span(begin, begin + 4), None), i
                if word == "true":
                    return Node("bool", self.span(begin, begin + 4), True), i
                if word == "false":
                    return Node("bool", self.span(begin, begin + 5), False), i
                if first == "-" or "0" <= first <= "9":
                    m = _NUMBER.match(s, begin)
                    if m is not None and m.end() == i:
                        return self.number(m, begin), i
                if eol:
                    if any(c in word for c in "]}"):
                        self.swallowed.append((begin, word))
                    return Node("string", self.span(begin, begin + len(word)), word), i
            i += 1

    def number(self, m: re.Match, begin: int) -> Node:
        integer, frac, exp = m.groups()
        span = self.span(begin, begin + len(m.group(0).rstrip(" \t")))
        if not (frac or exp):
            return Node("number", span, int(integer))
        value = float(integer + (frac or "") + (exp or ""))
        if math.isinf(value):
            raise _Fail(f"number `{m.group(0).strip()}` is too large (DeepSpeed\'s hjson parser crashes on it)",
                        begin, fatal=True, overflow=True)
        if value == int(value) and abs(value) < 1e10:
            return Node("number", span, int(value))
        return Node("number", span, value)


def _hex(text: str) -> int | None:
    # hjson converts with int(text, 16), which also takes a sign or an underscore.
    if len(text) != 4:
        return None
    try:
        return int(text, 16)
    except ValueError:
        return None


def parse(text: str) -> Parsed:
    """Parse hjson/JSON `text`; never raises. See the module docstring for the accepted language."""
    scanner = _Scanner(text)
    start = 1 if text.startswith("\ufeff") else 0
    try:
        i = scanner.skip(start)
        if scanner.char(i) == "" and start == 0:
            empty = Node("object", scanner.span(start, start))
            return Parsed(empty, duplicates=())
        if scanner.char(i) in "{[":
            root, end = scanner.value(i, "", 0)
        else:
            root, end = _braceless_root(scanner, i)
        end = scanner.skip(end)
        if end != len(text):
            raise _Fail("unexpected text after the end of the config", end)
    except _Fail as fail:
        if fail.offset >= len(text) and scanner.swallowed:
            begin, word = scanner.swallowed[-1]
            fail = _Fail(f"the unquoted value `{word}` runs to the end of its line (hjson), so its closing bracket "
                         "is part of the string; quote the value", begin)
        offset = min(fail.offset, len(text))
        problem = SyntaxProblem(fail.message, scanner.span(offset, offset + 1), fail.too_deep, fail.overflow)
        return Parsed(None, problem)
    except RecursionError:
        return Parsed(None, SyntaxProblem("nesting too deep", scanner.span(0, 1), too_deep=True))
    return Parsed(root, None, tuple(scanner.duplicates))


def _braceless_root(scanner: _Scanner, i: int) -> tuple[Node, int]:
    # hjson tries a root object without braces first, then a single bare value.
    saved = list(scanner.duplicates)
    try:
        return scanner.obj(i, i, "", 1, braces=False)
    except _Fail as first:
        if first.fatal:
            raise
        scanner.duplicates[:] = saved
        try:
            return scanner.value(i, "", 0)
        except _Fail:
            raise first from None


def to_plain(node: Node) -> object:
    """The plain Python value DeepSpeed would see (dicts keep the last duplicate)."""
    if node.kind == "object":
        return {entry.key: to_plain(entry.value) for entry in node.entries}
    if node.kind == "array":
        return [to_plain(item) for item in node.items]
    return node.value
