"""Where a trace finding points: the statement a frame was executing, as `path:line:col` like a static finding.

A frame knows the line it executes, which may be the third line of a call
split over five; a static finding names the statement. `statement_node` finds
the innermost statement whose *own* lines hold that line: a simple statement
(all its lines), or the header of a compound one (`if`, `for`, `while`,
`with`: up to its body). The finding names that statement's first line and
its first column, and the path as `zgen check` prints it.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from types import FrameType

from zgen.discover import display_path
from zgen.plan.frames import is_user_file

__all__ = ["Site", "site_of", "user_frame", "caller_site", "statement_node"]


@dataclass(frozen=True, slots=True)
class Site:
    """A statement: file as given by the frame (absolute), 1-based line and column, and its end."""

    file: str
    line: int
    column: int
    end_line: int
    end_column: int

    @property
    def path(self) -> str:
        """The file as `zgen check` prints it: relative to the cwd when under it, else absolute."""
        return display_path(self.file)


def user_frame(frame: FrameType | None) -> FrameType | None:
    """The innermost frame at or above `frame` that is the user's (not torch, zgen or the standard library)."""
    while frame is not None and not is_user_file(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


def site_of(file: str, line: int) -> Site:
    """The statement holding `line` of `file` (the line itself when the file cannot be parsed)."""
    node = statement_node(file, line)
    if node is None:
        return Site(file, line, 1, line, 2)
    end_line = _header_end(node)
    return Site(file, node.lineno, node.col_offset + 1, end_line,
                (node.end_col_offset or node.col_offset) + 1 if end_line == node.end_lineno else node.col_offset + 2)


def caller_site(frame: FrameType) -> Site | None:
    """The statement in the user's code that called `frame` (the first user frame above it)."""
    caller = user_frame(frame.f_back)
    return None if caller is None else site_of(caller.f_code.co_filename, caller.f_lineno)


def statement_node(file: str, line: int) -> ast.stmt | None:
    """The innermost statement whose own lines (a compound statement's header) hold `line`."""
    spans = _spans(file)
    best = None
    for first, last, node in spans:
        if first <= line <= last and (best is None or first >= best[0]):
            best = (first, last, node)
    return None if best is None else best[2]


def _header_end(node: ast.stmt) -> int:
    """The last line of a statement's own text: a compound statement ends before its body."""
    body = getattr(node, "body", None)
    if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
        first_inner = min([body[0].lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        return max(node.lineno, first_inner - 1)
    return node.end_lineno or node.lineno


@functools.lru_cache(maxsize=256)
def _spans(file: str) -> tuple[tuple[int, int, ast.stmt], ...]:
    try:
        with open(file, encoding="utf-8") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return ()
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            out.append((node.lineno, _header_end(node), node))
            # `else:`/`elif`/`except`/`finally` headers are lines of their own statement's header
    return tuple(out)
