"""Turn a fix (set, add or remove config keys) into text edits that keep the file's formatting and comments.

The parser records the span of every key and value, so an edit touches only
the characters it must: `set` replaces the value's text, `remove` takes out
the entry with its comma (and its line, when the entry has the line to
itself), `add` writes a new entry after the last one of the nearest existing
section, in that section's style (quoted or bare keys, commas or hjson's
newlines, the indentation of its entries). Everything else in the file, hjson
comments included, stays as it was.

`apply_edits` applies non-overlapping edits to a text (the `--fix` path).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from zgen.config.parse import Entry, Node, Span
from zgen.findings import Edit

__all__ = ["edits_for", "rename_key", "apply_edits", "Lines"]


@dataclass
class Lines:
    """Offsets of line starts, to move between 1-based (line, column) and string offsets."""

    text: str

    def __post_init__(self) -> None:
        self.starts = [0] + [i + 1 for i, ch in enumerate(self.text) if ch == "\n"]

    def offset(self, line: int, column: int) -> int:
        return self.starts[line - 1] + column - 1

    def position(self, offset: int) -> tuple[int, int]:
        lo, hi = 0, len(self.starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1, offset - self.starts[lo] + 1


def _literal(value: object) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    return json.dumps(value)


def _edit(lines: Lines, start: int, end: int, content: str) -> Edit:
    line, column = lines.position(start)
    end_line, end_column = lines.position(end)
    return Edit(content=content, line=line, column=column, end_line=end_line, end_column=end_column)


def _find(root: Node, path: list[str]) -> tuple[list[Entry], Node]:
    """The entries along `path` as far as they exist, and the deepest object reached."""
    node, found = root, []
    for part in path:
        entry = node.get(part) if node.kind == "object" else None
        if entry is None:
            break
        found.append(entry)
        node = entry.value
    return found, node


def edits_for(root: Node, text: str, changes, written: dict[str, str]) -> tuple[Edit, ...] | None:
    """Edits for `changes` (solver `Change`s); None when one of them is not a text edit (a world size).

    `written` maps a canonical key to the dotted path as spelled in the file
    (an alias, a deprecated section name), where the file has the key.
    """
    lines = Lines(text)
    out: list[Edit] = []
    for change in changes:
        if change.action == "world":
            return None
        path = written.get(change.key, change.key).split(".")
        found, node = _find(root, path)
        if change.action in ("set", "remove"):
            if len(found) != len(path):
                return None
            entry = found[-1]
            parent = found[-2].value if len(found) > 1 else root
            if change.action == "set":
                span = entry.value.span
                out.append(_edit(lines, lines.offset(span.line, span.column),
                                 lines.offset(span.end_line, span.end_column), _literal(change.value)))
            else:
                out.append(_removal(lines, parent, entry))
        elif change.action == "add":
            if len(found) == len(path) or (found and found[-1].value.kind != "object"):
                return None
            target = found[-1].value if found else root
            out.append(_addition(lines, target, path[len(found):], change.value))
        else:
            return None
    return tuple(out)


def rename_key(text: str, key_span: Span, new: str) -> Edit:
    """Replace the key token at `key_span` by `new`, keeping its quoting (double, single or bare)."""
    lines = Lines(text)
    start, end = lines.offset(key_span.line, key_span.column), lines.offset(key_span.end_line, key_span.end_column)
    quote = text[start] if text[start] in "\"'" else ""
    token = json.dumps(new) if quote == '"' else f"{quote}{new}{quote}"
    return _edit(lines, start, end, token)


def _end_of(lines: Lines, span: Span) -> int:
    return lines.offset(span.end_line, span.end_column)


def _removal(lines: Lines, parent: Node, entry: Entry) -> Edit:
    text = lines.text
    start = lines.offset(entry.key_span.line, entry.key_span.column)  # the key token, quotes included
    end = _end_of(lines, entry.value.span)
    index = parent.entries.index(entry)
    after = end
    while after < len(text) and text[after] in " \t":
        after += 1
    if after < len(text) and text[after] == ",":
        end = after + 1
    elif index > 0:
        # The last entry: take the comma after the previous one with it.
        prev_end = _end_of(lines, parent.entries[index - 1].value.span)
        between = text[prev_end:start]
        comma = between.find(",")
        if comma >= 0 and not between[:comma].strip():
            start = prev_end + comma
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    if not text[line_start:start].strip() and not text[end:line_end].strip():
        start, end = line_start, min(line_end + 1, len(text))  # the entry had its line(s) to itself
    return _edit(lines, start, end, "")


def _addition(lines: Lines, target: Node, rest: list[str], value: object) -> Edit:
    text = lines.text
    content: object = value
    for part in reversed(rest[1:]):
        content = {part: content}
    leaf = rest[0]
    quoted, comma, indent = _style(lines, target)
    key = json.dumps(leaf) if quoted else leaf
    body = f"{key}: {_literal(content)}"
    if target.entries:
        last = target.entries[-1]
        end = _end_of(lines, last.value.span)
        after = end
        while after < len(text) and text[after] in " \t":
            after += 1
        if after < len(text) and text[after] == ",":
            end = after + 1  # a trailing comma already separates the new entry
            return _edit(lines, end, end, f"\n{indent}{body}" + ("," if comma else ""))
        if indent is None:
            return _edit(lines, end, end, f", {body}")
        return _edit(lines, end, end, ("," if comma else "") + f"\n{indent}{body}")
    # An empty object (or an empty braceless root): write inside it.
    start = lines.offset(target.span.line, target.span.column)
    if start < len(text) and text[start] == "{":
        return _edit(lines, start + 1, start + 1, body)
    return _edit(lines, start, start, body + "\n")


def _style(lines: Lines, target: Node) -> tuple[bool, bool, str | None]:
    """(keys quoted, entries separated by commas, indentation of entries or None when they share a line)."""
    text = lines.text
    entries = target.entries
    if not entries:
        return True, True, None
    first = entries[0].key_span
    start = lines.offset(first.line, first.column)
    quoted = text[start] in "\"'"
    line_start = text.rfind("\n", 0, start) + 1
    prefix = text[line_start:start]
    indent = prefix if not prefix.strip() else None
    if len(entries) > 1:
        end = _end_of(lines, entries[0].value.span)
        nxt = lines.offset(entries[1].key_span.line, entries[1].key_span.column)
        comma = "," in _without_comments(text[end:nxt])
        if entries[1].key_span.line == entries[0].value.span.end_line:
            indent = None
    else:
        comma = "," in _without_comments(text) or text.lstrip().startswith("{")
    return quoted, comma, indent


def _without_comments(text: str) -> str:
    out = []
    for line in text.splitlines():
        for marker in ("//", "#"):
            cut = line.find(marker)
            if cut >= 0:
                line = line[:cut]
        out.append(line)
    return "\n".join(out)


def apply_edits(text: str, fixes: list[tuple[Edit, ...]]) -> tuple[str, int]:
    """`text` with each fix's edits applied, whole fixes only, skipping a fix that overlaps one taken earlier.

    Returns the new text and how many fixes were applied.
    """
    lines = Lines(text)
    taken: list[tuple[int, int, Edit]] = []

    def overlaps(start: int, end: int) -> bool:
        # Ranges that intersect, or two edits at one place (two insertions there would land in either order).
        return any((start < e and s < end) or start == s for s, e, _ in taken)

    applied = 0
    for edits in fixes:
        spans = [(lines.offset(e.line, e.column), lines.offset(e.end_line, e.end_column), e) for e in edits]
        if any(overlaps(s, e) for s, e, _ in spans):
            continue
        taken.extend(spans)
        applied += 1
    for start, end, e in sorted(taken, key=lambda t: (t[0], t[1]), reverse=True):
        text = text[:start] + e.content + text[end:]
    return text, applied
