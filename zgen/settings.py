"""`[tool.zgen]` settings from pyproject.toml, validated once at the edge.

Every key is declared in `_KEYS` with its type; an unknown key is an error with
a did-you-mean, a wrong type names the key and its line. The command line
overrides these values (each command merges its own flags); `Settings` is the
frozen result that the rest of zgen reads.
"""

from __future__ import annotations

import difflib
import math
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from zgen.config.autofill import CONSUMERS
from zgen.errors import ZgenError
from zgen.launch import DEFAULT_DEEPSPEED_VERSION

__all__ = ["Settings", "load_settings", "find_pyproject", "parse_size", "parse_memory", "suggest"]

OUTPUT_FORMATS = ("full", "concise", "json", "sarif", "github")

DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", ".mypy_cache", ".ruff_cache", ".pytest_cache",
    ".zgen_cache", "__pycache__", "__pypackages__", "node_modules", "build", "dist", "site-packages", ".eggs",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """The effective settings: `[tool.zgen]` values, defaults for the rest.

    `root` is the directory of the pyproject.toml they came from (or the
    current directory when there is none); relative paths in settings are
    relative to it. `pyproject` is that file, or None.
    """

    root: Path
    pyproject: Path | None = None
    # what to check
    src: tuple[str, ...] = (".",)
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    select: tuple[str, ...] = ("ZG", "ZC")
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    output_format: str = "full"
    cache_dir: str = ".zgen_cache"
    # launch facts and the model/config pairing
    model: str | None = None
    config: str | None = None
    inputs: str | None = None
    data: str | None = None
    init: str | None = None
    out: str | None = None
    world_size: int | None = None
    gpus_per_node: int | None = None
    gpu_mem: int | None = None
    params: int | None = None
    seq_len: int | None = None
    deepspeed_version: str = DEFAULT_DEEPSPEED_VERSION
    consumer: str | None = None
    rules: tuple[str, ...] = ()
    units: tuple[str, ...] = ()
    auto: bool = False  # `zgen plan`/`emit` search the fastest setting that fits gpu-mem (`--auto`)
    extra: tuple[tuple[str, Any], ...] = field(default=())

    def resolve(self, path: str) -> Path:
        """A settings path made absolute against the project root."""
        p = Path(path)
        return p if p.is_absolute() else self.root / p

    @property
    def model_path(self) -> str | None:
        """The file part of `model` (`path/to/model.py:factory` -> `path/to/model.py`)."""
        if not self.model:
            return None
        return split_target(self.model)[0]

    def merged(self, **overrides: Any) -> Settings:
        """A copy with the non-None overrides applied (how commands merge their flags)."""
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})


def split_target(target: str) -> tuple[str, str | None]:
    """Split `path/to/file.py:function` into its path and function (None when absent)."""
    path, sep, func = target.rpartition(":")
    if not sep or not func or "/" in func or "\\" in func or (len(path) == 1 and path.isalpha()):
        return target, None
    return path, func


# -- schema --------------------------------------------------------------------------------

def _str(v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError("a string")
    return v


def _str_list(v: Any) -> tuple[str, ...]:
    if isinstance(v, str) or not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise TypeError("a list of strings")
    return tuple(v)


def _pos_int(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise TypeError("a positive integer")
    return v


def _memory(v: Any) -> int:
    if isinstance(v, bool):
        raise TypeError("a memory size such as \"80GiB\"")
    if isinstance(v, (int, float)) and float(v).is_integer() and v >= _MIN_MEMORY:
        return int(v)
    if isinstance(v, str):
        try:
            return parse_memory(v)
        except ZgenError:
            pass
    raise TypeError(f"a memory size with a unit, such as \"80GiB\" ({_MEMORY_UNITS_TEXT}), or bytes (at least 1 MiB)")


def _size(v: Any) -> int:
    if isinstance(v, bool):
        raise TypeError("a size such as 80 or \"80GiB\"")
    if isinstance(v, (int, float)) and v > 0 and float(v).is_integer():
        return int(v)
    if isinstance(v, str):
        try:
            return parse_size(v)
        except ZgenError:
            pass
    raise TypeError("a size such as 80000000000 or \"80GiB\"")


def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise TypeError("true or false")
    return v


def _format(v: Any) -> str:
    s = _str(v)
    if s not in OUTPUT_FORMATS:
        raise TypeError("one of " + ", ".join(OUTPUT_FORMATS))
    return s


def _consumer(v: Any) -> str:
    s = _str(v)
    if s not in CONSUMERS:
        raise TypeError("one of " + ", ".join(CONSUMERS) + suggest(s, CONSUMERS))
    return s


def _per_file(v: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(v, dict):
        raise TypeError('a table of glob = ["CODE", ...]')
    out = []
    for glob, codes in v.items():
        out.append((glob, _str_list(codes)))
    return tuple(out)


_KEYS: dict[str, Any] = {
    "src": _str_list,
    "exclude": _str_list,
    "extend-exclude": _str_list,
    "select": _str_list,
    "extend-select": _str_list,
    "ignore": _str_list,
    "per-file-ignores": _per_file,
    "output-format": _format,
    "cache-dir": _str,
    "model": _str,
    "config": _str,
    "inputs": _str,
    "data": _str,
    "init": _str,
    "out": _str,
    "world-size": _pos_int,
    "gpus-per-node": _pos_int,
    "gpu-mem": _memory,
    "params": _size,
    "seq-len": _pos_int,
    "deepspeed-version": _str,
    "consumer": _consumer,
    "rules": _str_list,
    "units": _str_list,
    "auto": _bool,
}


def suggest(word: str, choices) -> str:
    """` (did you mean `x`?)` for the closest choice, or an empty string."""
    match = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean `{match[0]}`?)" if match else ""


_SIZE_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Z]*)\s*$")
_UNITS = {
    "": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9, "t": 10**12, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
    "b": 10**9,  # parameter counts: `1.2B`
}


def parse_size(text: str) -> int:
    """Parse `80GiB`, `80GB`, `1.2B` (billion), `350M`, `5e7` into an integer; ZgenError if it is not one.

    K/M/G/T (and KB/MB/GB/TB) are powers of 1000, KiB/MiB/GiB/TiB powers of 1024,
    and a bare `B` means billion, as in parameter counts.
    """
    m = _SIZE_RE.match(str(text))
    if not m:
        raise ZgenError(f"`{text}` is not a size", help="write a number with an optional unit, e.g. 80GiB, 1.2B, 5e7")
    number, unit = float(m.group(1)), m.group(2).lower()
    scale = _UNITS.get(unit)
    if scale is None:
        raise ZgenError(f"`{text}` has an unknown unit `{m.group(2)}`", help="use one of K, M, G, T, B, KiB, MiB, GiB, TiB")
    value = number * scale
    if value < 1 or value > 2**62:
        raise ZgenError(f"`{text}` is out of range", help="give a positive size below 4 EiB")
    return int(round(value))


_MEMORY_UNITS = {u: _UNITS[u] for u in ("k", "kb", "m", "mb", "g", "gb", "t", "tb", "kib", "mib", "gib", "tib")}
_MEMORY_UNITS_TEXT = "units: KB, MB, GB, TB, KiB, MiB, GiB, TiB"
_MIN_MEMORY = 2**20


def parse_memory(text: str) -> int:
    """Parse a memory size that names its unit (`80GiB`, `141GB`) into bytes; ZgenError otherwise.

    A bare number is refused rather than read as bytes: `--gpu-mem 80` means 80 GiB to a person and
    80 bytes to a parser. `B` alone is refused too (elsewhere it means billion).
    """
    m = _SIZE_RE.match(str(text))
    if not m:
        raise ZgenError(f"`{text}` is not a memory size", help=f"write a number and a unit, e.g. 80GiB ({_MEMORY_UNITS_TEXT})")
    unit = m.group(2).lower()
    if not unit:
        raise ZgenError(f"`{text}` has no unit", help=f"write the unit, e.g. {m.group(1)}GiB ({_MEMORY_UNITS_TEXT})")
    scale = _MEMORY_UNITS.get(unit)
    if scale is None:
        raise ZgenError(f"`{text}` has a unit `{m.group(2)}` that is not a memory unit", help=_MEMORY_UNITS_TEXT)
    value = float(m.group(1)) * scale
    if value < _MIN_MEMORY or value > 2**62:
        raise ZgenError(f"`{text}` is not a GPU memory size (below 1 MiB or above 4 EiB)",
                        help=f"e.g. 80GiB ({_MEMORY_UNITS_TEXT})")
    return int(round(value))


def format_memory(n: int, *, round_up: bool = False) -> str:
    """A byte count as a size `parse_memory` reads back: exact (`80GiB`, `1536MiB`, `0.5KiB`) by default;
    with `round_up`, in GiB to two decimals and never below `n` (for advice a person types)."""
    if round_up:
        return f"{math.ceil(n * 100 / 2**30) / 100:g}GiB"
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if n % scale == 0:
            return f"{n // scale}{unit}"
    return f"{n / 2**10!r}KiB"  # a division by a power of two is exact in a float


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above `start` that has a `[tool.zgen]` table, else None."""
    start = start.resolve()
    for d in (start, *start.parents):
        candidate = d / "pyproject.toml"
        if candidate.is_file():
            try:
                text = candidate.read_text(encoding="utf-8")
            except OSError:
                continue
            if re.search(r"^\s*\[tool\.zgen[\].]", text, re.M):
                return candidate
    return None


def _key_line(text: str, key: str) -> int | None:
    """Line of `key = ...` inside the [tool.zgen] table (TOML parsers do not report positions)."""
    in_table = False
    for i, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if s.startswith("["):
            in_table = s.startswith("[tool.zgen")
            if s.startswith(f"[tool.zgen.{key}]"):
                return i
            continue
        if in_table and re.match(rf'^["\']?{re.escape(key)}["\']?\s*=', s):
            return i
    return None


def load_settings(pyproject: Path | None = None, cwd: Path | None = None) -> Settings:
    """Settings from `pyproject` (or the nearest one with `[tool.zgen]` above `cwd`), else defaults."""
    cwd = cwd or Path.cwd()
    if pyproject is None:
        pyproject = find_pyproject(cwd)
        if pyproject is None:
            return Settings(root=cwd.resolve())
    else:
        pyproject = Path(pyproject)
        if pyproject.is_dir():
            pyproject = pyproject / "pyproject.toml"
    try:
        text = pyproject.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ZgenError(f"{pyproject}: cannot read settings: {e}") from None
    if sys.version_info >= (3, 11):  # imported here: a check outside a configured project never needs it
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ZgenError(f"{pyproject}: invalid TOML: {e}", help="fix the syntax error; zgen reads `[tool.zgen]`") from None
    table = doc.get("tool", {}).get("zgen", {})
    if not isinstance(table, dict):
        raise ZgenError(f"{pyproject}: `tool.zgen` must be a table")
    values: dict[str, Any] = {}
    for key, raw in table.items():
        where = f"{pyproject}:{_key_line(text, key) or 1}"
        conv = _KEYS.get(key)
        if conv is None:
            raise ZgenError(
                f"{where}: unknown setting `{key}` in `[tool.zgen]`{suggest(key, _KEYS)}",
                help="see `zgen check --help` for the settings zgen reads",
            )
        try:
            values[key.replace("-", "_")] = conv(raw)
        except TypeError as e:
            raise ZgenError(f"{where}: `{key}` must be {e}, got {raw!r}") from None
    return Settings(root=pyproject.parent.resolve(), pyproject=pyproject.resolve(), **values)
