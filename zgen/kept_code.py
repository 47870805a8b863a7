"""Compiled code of the methods `dataclasses` generates, kept across runs like a module's bytecode.

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
"""

from __future__ import annotations

import builtins
import dataclasses
import importlib.util
import marshal
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import CodeType

__all__ = ["kept_dataclass_code"]

_DIRECTORY = Path(__file__).resolve().parent / "__pycache__"
# The bytecode magic number and the optimisation level the code was compiled under: another interpreter or
# `-O` reads no stale code.
_HEADER = importlib.util.MAGIC_NUMBER + bytes([sys.flags.optimize])
_MAX_ENTRIES = 5000


def _file(name: str, directory: Path | None) -> Path:
    return (directory or _DIRECTORY) / f"{name}.{sys.implementation.cache_tag}.dataclass-code"


def _read(path: Path) -> dict[str, CodeType]:
    try:
        data = path.read_bytes()
    except OSError:
        return {}
    if not data.startswith(_HEADER):
        return {}
    try:
        kept = marshal.loads(data[len(_HEADER):])
    except (EOFError, ValueError, TypeError):
        return {}
    if not isinstance(kept, dict):
        return {}
    return {k: v for k, v in kept.items() if isinstance(k, str) and isinstance(v, CodeType)}


def _write(path: Path, kept: dict[str, CodeType]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            os.fchmod(fd, 0o644)  # readable by every user of the install, as its bytecode is
            with os.fdopen(fd, "wb") as f:
                f.write(_HEADER + marshal.dumps(kept))
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
    kept = _read(path)
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
