"""Compiled code kept across runs like a module's bytecode: dataclass methods and regular expressions.

`@dataclass` writes the source of each class's `__init__`, `__repr__`, `__eq__`,
`__hash__` (and, frozen, `__setattr__`/`__delattr__`) and compiles it on every
import. libcst defines about 200 frozen dataclass nodes: compiling those texts is
about half of the 0.2-0.25 s its import costs, in every `zgen check` process. The
texts are the same from one run to the next, so `kept_dataclass_code()` compiles
each once and keeps the code objects in `__pycache__` beside this module (as the
interpreter keeps a module's `.pyc`), under the interpreter's cache tag and bytecode
magic number. The code is the same a fresh compile makes (same text, filename and
flags), so the classes are too; a file that cannot be read or written only costs
the compile. Nothing is written when the interpreter writes no bytecode
(`PYTHONDONTWRITEBYTECODE`, `-B`).

`kept_patterns()` does the same for regular expressions. The static check compiles
about 200 (word lists of torch, library and rule names, trigger texts), about 15,000
characters through `re`'s parser, which is written in Python: 50-100 ms of every
`zgen check` process. The parser's output (the program `_sre` runs, its groups) is
the same from one run to the next, so it is kept under the interpreter's cache tag
and `_sre`'s magic number and handed straight to `_sre.compile`.
"""

from __future__ import annotations

import builtins
import dataclasses
import importlib.util
import marshal
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import CodeType

from zgen.files import temporary_file

__all__ = ["kept_dataclass_code", "kept_patterns"]

_DIRECTORY = Path(__file__).resolve().parent / "__pycache__"
# The bytecode magic number and the optimisation level the code was compiled under: another interpreter or
# `-O` reads no stale code.
_HEADER = importlib.util.MAGIC_NUMBER + bytes([sys.flags.optimize])
_MAX_ENTRIES = 5000


def _file(name: str, directory: Path | None, kind: str = "dataclass-code") -> Path:
    return (directory or _DIRECTORY) / f"{name}.{sys.implementation.cache_tag}.{kind}"


def _read(path: Path, header: bytes = _HEADER) -> dict:
    """The dictionary kept at `path`, or an empty one when it is missing, unreadable or of another interpreter."""
    try:
        data = path.read_bytes()
    except OSError:
        return {}
    if not data.startswith(header):
        return {}
    try:
        kept = marshal.loads(data[len(header):])
    except (EOFError, ValueError, TypeError):
        return {}
    return kept if isinstance(kept, dict) else {}


def _read_code(path: Path) -> dict[str, CodeType]:
    return {k: v for k, v in _read(path).items() if isinstance(k, str) and isinstance(v, CodeType)}


def _write(path: Path, kept: dict, header: bytes = _HEADER) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = temporary_file(path.parent, f".{path.name}.")
        try:
            os.fchmod(fd, 0o644)  # readable by every user of the install, as its bytecode is
            with os.fdopen(fd, "wb") as f:
                f.write(header + marshal.dumps(kept))
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except (OSError, ValueError):
        pass  # a read-only install: the next run compiles again


@contextmanager
def kept_dataclass_code(name: str, directory: Path | None = None) -> Iterator[None]:
    """While active, a dataclass's generated methods are compiled from code kept under `name` when their source
    text was compiled before (by a run of the same interpreter), and what is compiled anew is kept for the next run.

    Wrap the import of a package that defines many dataclasses. Nested or concurrent use compiles as usual.
    """
    if "exec" in vars(dataclasses):  # already active (or `dataclasses` no longer calls a global `exec`)
        yield
        return
    path = _file(name, directory)
    kept = _read_code(path)
    used: dict[str, CodeType] = {}

    def exec_kept(source, globals=None, locals=None, /):  # noqa: A002  (the builtin's own parameter names)
        if type(source) is str:
            code = kept.get(source)
            if code is None:
                # Without the future flags of this module: `exec` of a text inherits those of `dataclasses`, none.
                code = compile(source, "<string>", "exec", dont_inherit=True)
            used[source] = code
            source = code
        if globals is None:  # `exec(text)` runs in its caller's namespace
            caller = sys._getframe(1)
            globals = caller.f_globals
            locals = caller.f_locals if locals is None else locals
        return builtins.exec(source, globals, locals)

    dataclasses.exec = exec_kept  # found before the builtin by `dataclasses`' own calls of `exec`
    try:
        yield
    finally:
        del dataclasses.exec
        if used.keys() - kept.keys() and not sys.dont_write_bytecode:
            merged = {**kept, **used}  # what another version of the package compiled goes once the file is full
            _write(path, merged if len(merged) <= _MAX_ENTRIES else used)


def _pattern_header() -> bytes:
    import _sre

    return _HEADER + _sre.MAGIC.to_bytes(4, "little")


@contextmanager
def kept_patterns(name: str, directory: Path | None = None) -> Iterator[None]:
    """While active, `re` compiles a text pattern it compiled in an earlier run of the same interpreter from the
    program kept under `name`, without parsing it again; what is compiled anew is kept for the next run.

    Only `re`'s own cache misses reach this (`re.compile`, `re.search`, ... of a new pattern). Patterns with
    `re.DEBUG`, bytes patterns, nested or concurrent use compile as usual, and so does everything when `re`'s
    internals are not the ones this was written against.
    """
    import _sre
    from re import _compiler

    compile_ = vars(_compiler).get("compile")
    if compile_ is None or getattr(compile_, "kept", False) or not callable(getattr(_sre, "compile", None)):
        yield
        return
    header = _pattern_header()
    path = _file(name, directory, "patterns")
    kept = _read(path, header)
    used: dict[tuple[str, int], tuple] = {}

    def compile_kept(p, flags=0):
        if type(p) is not str or flags & re.DEBUG:
            return compile_(p, flags)
        key = (p, int(flags))
        args = kept.get(key)
        if args is not None:
            try:
                compiled = _sre.compile(*args)
            except (TypeError, ValueError, RuntimeError):  # a stale or damaged entry: compile it again
                kept.pop(key, None)
            else:
                used[key] = args
                return compiled
        seen: list[tuple] = []
        real = _compiler._sre

        class _Recording:  # `_compiler.compile` ends in `_sre.compile(pattern, flags, code, groups, ...)`
            def __getattr__(self, attr):
                return getattr(real, attr)

            @staticmethod
            def compile(*a):
                seen.append(a)
                return real.compile(*a)

        _compiler._sre = _Recording()
        try:
            compiled = compile_(p, flags)
        finally:
            _compiler._sre = real
        if len(seen) == 1 and seen[0][0] == p:
            pattern, final_flags, code, groups, groupindex, indexgroup = seen[0]
            used[key] = (pattern, int(final_flags), [int(c) for c in code], int(groups), dict(groupindex), tuple(indexgroup))
        return compiled

    compile_kept.kept = True
    _compiler.compile = compile_kept
    try:
        yield
    finally:
        _compiler.compile = compile_
        if used.keys() - kept.keys() and not sys.dont_write_bytecode and len(used) <= _MAX_ENTRIES:
            # Only this run's patterns: those built from one file's names (a class's attributes) go with it.
            _write(path, used, header)
