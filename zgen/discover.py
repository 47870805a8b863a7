"""Turn command-line paths into the files to check: model sources and DeepSpeed configs.

A file or directory named on the command line is always checked, even when
its name matches an exclude such as `venv` (unless `force_exclude`; then the
run notes how many files it skipped). A directory is walked recursively,
skipping excluded names and globs below it; in it,
`.py` files are model sources and `.json`/`.hjson` files are checked only
when they look like DeepSpeed configs (a cheap sniff for DeepSpeed's
top-level keys), so a repository's other JSON files stay out of the way.
zgen's own files are never configs: the plan `zgen emit` writes beside its
script (`train_gen.plan.json`) is skipped, also when named on the command line
(the pre-commit hook names every staged file).
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path

from zgen.errors import ZgenError

__all__ = ["Inputs", "discover", "display_path", "CONFIG_SUFFIXES"]

CONFIG_SUFFIXES = (".json", ".hjson")
_DS_MARKERS = (
    b"zero_optimization", b"train_micro_batch_size_per_gpu", b"train_batch_size",
    b"gradient_accumulation_steps", b"zero_optimisation",
)


@dataclass(frozen=True, slots=True)
class Inputs:
    """The files one run checks, in a stable order, as display paths (relative to the cwd when possible).

    `notes` are warnings for the user that do not stop the run: a directory
    that could not be read, a named path skipped by `--force-exclude`.
    """

    sources: tuple[str, ...]
    configs: tuple[str, ...]
    notes: tuple[str, ...] = ()


def display_path(path: Path | str, cwd: Path | None = None) -> str:
    """`path` relative to the cwd (posix separators) when it is below it, else absolute."""
    p = Path(path)
    cwd = cwd or Path.cwd()
    try:
        ap = p if p.is_absolute() else (cwd / p)
        return Path(os.path.normpath(ap)).relative_to(cwd).as_posix()
    except ValueError:
        return Path(os.path.normpath(p.absolute())).as_posix()


def _excluded(rel: str, name: str, patterns: tuple[str, ...], *, inside: bool = True) -> bool:
    """Does an exclude match this entry? `inside`: also when it matches a directory above it.

    A directory walk prunes excluded directories as it meets them, so it asks
    with `inside=False`: a tree the user named (`venv/lib/.../pkg`) is not
    excluded by the `venv` above it.
    """
    for pat in patterns:
        pat = pat.rstrip("/")
        if name == pat or fnmatch.fnmatch(name, pat) or fnmatch.fnmatch(rel, pat):
            return True
        if inside and fnmatch.fnmatch(rel, pat + "/*"):
            return True
    return False


# Keys of the plan file `zgen emit` writes (`zgen.schedule.plan.Plan.to_dict`) that no DeepSpeed config has.
_PLAN_MARKERS = (b'"forward_order"', b'"forward_prefetch"', b'"backward_prefetch"', b'"units"')


def _head(path: Path) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(1 << 16)
    except OSError:
        return b""


def _looks_like_ds_config(path: Path) -> bool:
    head = _head(path)
    return any(m in head for m in _DS_MARKERS) and not _is_zgen_plan(head)


def _is_zgen_plan(head: bytes) -> bool:
    return all(m in head for m in _PLAN_MARKERS)


def discover(
    paths: list[str],
    exclude: tuple[str, ...],
    *,
    force_exclude: bool = False,
    cwd: Path | None = None,
    explicit: tuple[str, ...] = (),
) -> Inputs:
    """Expand files and directories into model sources and configs; ZgenError for a path that does not exist.

    `explicit` are the excludes the user configured (not the defaults such as
    `venv`): a directory a walk skips because of one is named in a note with
    the number of files skipped, so a check never looks clean by omission.
    """
    cwd = cwd or Path.cwd()
    sources: dict[str, None] = {}
    configs: dict[str, None] = {}
    notes: list[str] = []
    for raw in paths:
        p = Path(raw)
        if not p.is_absolute():
            p = cwd / p
        rel = display_path(p, cwd)
        if force_exclude and p.exists() and _excluded(rel, p.name, exclude):
            count = _count_files(p)
            notes.append(f"{rel}: excluded (--force-exclude), skipped {count} file{'s' if count != 1 else ''}")
            continue
        if p.is_file():
            if p.suffix == ".py":
                sources[rel] = None
            elif p.suffix in CONFIG_SUFFIXES:
                if not _is_zgen_plan(_head(p)):
                    configs[rel] = None
            else:
                raise ZgenError(
                    f"{raw}: zgen checks Python model files (.py) and DeepSpeed configs (.json, .hjson), not `{p.suffix or p.name}`",
                    help="pass model sources, config files, or directories that contain them",
                )
        elif p.is_dir():
            def unreadable(error: OSError) -> None:
                where = display_path(error.filename or p, cwd)
                notes.append(f"{where}: cannot read directory: {error.strerror or error}; its files are not checked")

            for dirpath, dirnames, filenames in os.walk(p, onerror=unreadable):
                d = Path(dirpath)
                drel = display_path(d, cwd)
                kept = []
                for n in sorted(dirnames):
                    nrel = f"{drel}/{n}" if drel != "." else n
                    if not _excluded(nrel, n, exclude, inside=False):
                        kept.append(n)
                    elif explicit and _excluded(nrel, n, explicit, inside=False):
                        _note_skipped(notes, nrel, d / n)
                dirnames[:] = kept
                for name in sorted(filenames):
                    frel = f"{drel}/{name}" if drel != "." else name
                    if _excluded(frel, name, exclude, inside=False):
                        if explicit and name.endswith((".py",) + CONFIG_SUFFIXES):
                            if _excluded(frel, name, explicit, inside=False):
                                _note_skipped(notes, frel, d / name)
                        continue
                    if name.endswith(".py"):
                        sources[frel] = None
                    elif name.endswith(CONFIG_SUFFIXES) and _looks_like_ds_config(d / name):
                        configs[frel] = None
        elif p.exists():
            raise ZgenError(f"{raw}: not a regular file or directory")
        else:
            raise ZgenError(f"{raw}: no such file or directory", help="check the path; zgen resolves it against the current directory")
    return Inputs(tuple(sorted(sources)), tuple(sorted(configs)), tuple(notes))


def _note_skipped(notes: list[str], rel: str, path: Path) -> None:
    count = _count_files(path)
    if count:
        notes.append(f"{rel}: excluded by the configured `exclude`, skipped {count} file{'s' if count != 1 else ''}")


def _count_files(path: Path) -> int:
    """Files under `path` that a check would have looked at (.py and config suffixes)."""
    if path.is_file():
        return 1
    suffixes = (".py",) + CONFIG_SUFFIXES
    return sum(1 for _d, _n, files in os.walk(path) for name in files if name.endswith(suffixes))
