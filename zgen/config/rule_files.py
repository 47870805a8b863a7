"""Where the config rules are: the TOML files shipped as `zgen.rules`, and the codes a set of rule files defines.

`codes` reads the files' `code` entries only (no rule is compiled), so a
check that never solves a config still knows every ZC code for `--select`
and `# noqa` validation; `zgen.solver.rules.load_rules` compiles them.
Every `zgen check` asks, so the shipped files are read line by line for the
`code = "..."` of each `[[rule]]` and `[[code]]` table rather than parsed as
TOML (a tenth of the time, and tomllib's import spared); a test holds that
reading equal to tomllib's for each shipped file, and the registry checks it
again against the compiled rules when their documentation is loaded. Other
files (`--rules`) are parsed as TOML.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from collections.abc import Sequence

__all__ = ["builtin_rule_files", "builtin_codes", "shipped_codes"]


def builtin_rule_files() -> list[str]:
    """The rule files shipped in the `zgen.rules` package, sorted by name."""
    # (the package's folders from its spec, not `importlib.resources.files`: that import, and the zip reader it
    # loads, cost 1.5% of a one-file model check, which asks for the codes)
    spec = importlib.util.find_spec("zgen.rules")
    folders = (spec.submodule_search_locations or []) if spec is not None else []
    return sorted(os.path.join(d, name) for d in folders for name in os.listdir(d) if name.endswith(".toml"))


def builtin_codes(files: Sequence[str] | None = None) -> frozenset[str]:
    """The codes the built-in rule files (or `files`, when they are valid) define in `[[rule]]` and `[[code]]`."""
    found: set[str] = set()
    if files is None:
        for path in builtin_rule_files():
            with open(path, encoding="utf-8") as f:
                found.update(shipped_codes(f.read()))
        return frozenset(found)
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    for path in files:
        with open(path, "rb") as f:
            data = tomllib.load(f)
        for table in ("rule", "code"):
            found.update(entry["code"] for entry in data.get(table, ()) if isinstance(entry.get("code"), str))
    return frozenset(found)


_HEADER = re.compile(r"\s*(\[\[?)\s*([\w.\-]+)\s*\]\]?\s*(?:#.*)?")
_CODE = re.compile(r"""\s*code\s*=\s*"([^"\\]*)"\s*(?:#.*)?""")
_MULTILINE = re.compile(r'"""|\'\'\'')


def shipped_codes(text: str) -> list[str]:
    """The `code` entries of the `[[rule]]` and `[[code]]` tables of a shipped rule file, read line by line.

    The shipped files' layout: a table header on its own line, `code = "ZCnnn"` on one line, longer texts in
    multi-line strings (whose lines are skipped).
    """
    codes: list[str] = []
    table: str | None = None
    in_string: str | None = None
    for line in text.splitlines():
        if in_string is not None:
            if line.count(in_string) % 2:
                in_string = None
            continue
        header = _HEADER.fullmatch(line)
        if header:
            table = header.group(2) if header.group(1) == "[[" else None
            continue
        if table in ("rule", "code"):
            m = _CODE.fullmatch(line)
            if m:
                codes.append(m.group(1))
                continue
        quotes = _MULTILINE.findall(line)
        if len(quotes) % 2:
            in_string = quotes[-1]
    return codes
