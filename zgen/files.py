"""File helpers any part of zgen may use: the atomic-write files of its caches and kept code.

A base-layer module (ARCHITECTURE.md): it imports nothing of zgen, so the kept code
(`zgen.kept_code`), the findings cache (`zgen.cache`) and the model checker's summaries
of other files (`zgen.model.program.project`) all write through it.
"""

from __future__ import annotations

import os

__all__ = ["temporary_file"]


def temporary_file(directory: str | os.PathLike, prefix: str) -> tuple[int, str]:
    """A new file `directory/<prefix><unique>.tmp`, open for writing (mode 0600): `tempfile.mkstemp`'s result
    without `tempfile`'s import (it loads `random`, `shutil`, `bz2` and `lzma`: half a percent of a one-file
    check). Raises OSError as `mkstemp` does."""
    while True:
        path = os.path.join(directory, f"{prefix}{os.getpid()}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600), path
        except FileExistsError:
            continue
