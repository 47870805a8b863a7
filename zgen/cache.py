"""Content-hash cache of per-file findings, so an unchanged file is never parsed twice.

The key covers zgen's version, the selected rules, the display path and the
file's bytes (and, where the cache is used, a digest of zgen's own source, so an
upgrade or an edited checkout that keeps the version string never reuses another
zgen's findings); any change to one of them is a miss. An entry also records the
other files the check read (the source of imported base classes and layers)
with their content hashes; when one of them changed, the entry is a miss too. The cache is one JSON file
under `cache-dir` (default `.zgen_cache/` in the project root), rewritten
atomically with only the entries the last run used plus recent others, so it
does not grow without bound. A cache that cannot be read or written is
ignored: it only ever costs speed, never correctness.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path

from zgen import __version__
from zgen.files import temporary_file
from zgen.findings import Finding
from zgen.model.program.project import definers_digest, definers_of_key, file_digest, package_table

__all__ = ["FindingsCache", "cache_key", "code_fingerprint"]

_FORMAT = 2
_MAX_ENTRIES = 20_000


def cache_key(path: str, data: bytes, selection_key: str) -> str:
    h = hashlib.blake2b(digest_size=20)
    h.update(f"{_FORMAT}|{__version__}|{selection_key}|{path}|".encode())
    h.update(data)
    return h.hexdigest()


@functools.cache
def code_fingerprint() -> str:
    """A digest of the source of the zgen package this process runs (every `.py` file, by path and content): a
    few milliseconds, paid only by a run that uses the cache."""
    root = Path(__file__).resolve().parent
    h = hashlib.blake2b(digest_size=16)
    for path in sorted(root.rglob("*.py")):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(hashlib.blake2b(data, digest_size=16).digest())
    return h.hexdigest()


class FindingsCache:
    """Load once, `get`/`put` per file, `save` once at the end of a run."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self._old: dict[str, dict] = {}
        self._new: dict[str, dict] = {}
        self._digests: dict[str, str | None] = {}  # dependency path -> its content hash now
        self._tables: dict[str, dict[str, tuple[str, ...]] | None] = {}  # package directory -> `package_table`
        if directory is not None:
            try:
                doc = json.loads((directory / "findings.json").read_text(encoding="utf-8"))
                if doc.get("format") == _FORMAT and doc.get("zgen") == __version__:
                    self._old = doc["entries"]
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                self._old = {}

    def get(self, key: str) -> list[Finding] | None:
        """The findings stored under `key`, or None when absent or when a file it read has changed."""
        entry = self._new.get(key)
        if entry is None:
            entry = self._old.get(key)
            if entry is None:
                return None
        try:
            if any(self._digest(path) != digest for path, digest in entry["deps"].items()):
                return None
            findings = [Finding.from_dict(d) for d in entry["findings"]]
        except (KeyError, TypeError, ValueError, AttributeError):
            self._new.pop(key, None)
            return None
        self._new[key] = entry
        return findings

    def put(self, key: str, findings: list[Finding], deps: dict[str, str] | None = None) -> None:
        """Store a file's findings with the other files (path -> content hash) they depend on."""
        self._new[key] = {"findings": [f.to_dict() for f in findings], "deps": dict(deps or {})}

    def _digest(self, path: str) -> str | None:
        if path not in self._digests and (definers := definers_of_key(path)) is not None:
            directory, name = definers  # which files of a package define a method (`project.definers_key`)
            if directory not in self._tables:
                self._tables[directory] = package_table(directory) if os.path.isdir(directory) else None
            table = self._tables[directory]
            self._digests[path] = definers_digest(table.get(name, ())) if table is not None else None
        if path not in self._digests:
            try:
                with open(path, "rb") as f:
                    self._digests[path] = file_digest(f.read())
            except OSError:
                self._digests[path] = None
        return self._digests[path]

    def save(self) -> None:
        if self.directory is None or not self._new:
            return
        entries = dict(self._new)
        for k, v in self._old.items():
            if len(entries) >= _MAX_ENTRIES:
                break
            entries.setdefault(k, v)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            ignore = self.directory / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# created by zgen: this folder is a cache\n*\n", encoding="utf-8")
            fd, tmp = temporary_file(self.directory, ".findings.")
            # `dumps`, not `dump`: only a one-shot encode runs json's C encoder (five times faster on a warm run's cache)
            text = json.dumps({"format": _FORMAT, "zgen": __version__, "entries": entries}, separators=(",", ":"))
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, self.directory / "findings.json")
        except OSError:
            pass
