"""Where a trace finding points: the statement a frame was executing, as `path:line:col` like a static finding.

A frame knows the line it executes, which may be the third line of a call
split over five; a static finding names the statement. `statement_node` finds
the innermost statement whose *own* lines hold that line: a simple statement
(all its lines), or the header of a compound one (`if`, `for`, `while`,
`with`: up to its body). The finding names that statement's first line and
its first column, and the path as `zgen check` prints it.

Which frame's statement. The innermost frame outside torch, zgen and the
standard library (`user_frame`), unless that frame belongs to a helper of
another package that the parameter was handed to: a tensor-notation library
(`einops.repeat(self.pos, ...)`), a generic utility. Such a helper did what it
was asked; the statement to change is the one that handed it the parameter.
So `use_frame` walks out over whole packages: while the outermost frame of
the innermost package's stretch of the stack received the parameter as an
argument, the statement is the caller's, in the next package out. A helper of
the same package (a library's own `inplace_copy(tgt, src)`) stays: that is the
library's statement, and where its authors would fix it.
"""

from __future__ import annotations

import ast
import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from inspect import CO_VARARGS, CO_VARKEYWORDS
from types import FrameType

from zgen.discover import display_path
from zgen.plan.frames import is_user_file

__all__ = ["Site", "site_of", "user_frame", "use_frame", "package_of", "caller_site", "statement_node"]


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


def use_frame(frame: FrameType | None, handed: Callable[[object], bool]) -> FrameType | None:
    """The frame whose statement a use at `frame` is reported at (see the module docstring); `handed(value)`
    says whether an argument value is the parameter used (or a view of it)."""
    here = user_frame(frame)
    while here is not None:
        package = package_of(here.f_code.co_filename)
        outermost, f = here, here.f_back
        while f is not None:
            if is_user_file(f.f_code.co_filename):
                if package_of(f.f_code.co_filename) != package:
                    break
                outermost = f
            f = f.f_back
        if f is None or not any(handed(v) for v in arguments(outermost)):
            return here
        here = f
    return here


def arguments(frame: FrameType) -> list[object]:
    """The values of a frame's parameters now (`*args` and `**kwargs` spread)."""
    code = frame.f_code
    names = list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
    local = frame.f_locals
    values = [local.get(n) for n in names]
    extra = code.co_argcount + code.co_kwonlyargcount
    if code.co_flags & CO_VARARGS:
        values.extend(local.get(code.co_varnames[extra], ()) or ())
        extra += 1
    if code.co_flags & CO_VARKEYWORDS:
        kw = local.get(code.co_varnames[extra])
        if isinstance(kw, dict):
            values.extend(kw.values())
    return values


@functools.lru_cache(maxsize=4096)
def package_of(file: str) -> str:
    """The directory of the outermost package holding `file` (its own directory when that is no package)."""
    folder = os.path.dirname(os.path.abspath(file))
    top = folder
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        top = folder
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return top


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
