"""Where the config rules are: the TOML files shipped as `zgen.rules`, and the codes a set of rule files defines.

`codes` reads the files' `code` entries only (no rule is compiled), so a
check that never solves a config still knows every ZC code for `--select`
and `# noqa` validation; `zgen.solver.rules.load_rules` compiles them.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib import resources

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["builtin_rule_files", "builtin_codes"]


def builtin_rule_files() -> list[str]:
    """The rule files shipped in the `zgen.rules` package, sorted by name."""
    folder = resources.files("zgen.rules")
    return sorted(str(p) for p in folder.iterdir() if p.name.endswith(".toml"))


def builtin_codes(files: Sequence[str] | None = None) -> frozenset[str]:
    """The codes the built-in rule files (or `files`, when they are valid) define in `[[rule]]` and `[[code]]`."""
    found: set[str] = set()
    for path in builtin_rule_files() if files is None else files:
        with open(path, "rb") as f:
            data = tomllib.load(f)
        for table in ("rule", "code"):
            found.update(entry["code"] for entry in data.get(table, ()) if isinstance(entry.get("code"), str))
    return frozenset(found)
