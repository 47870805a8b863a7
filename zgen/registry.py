"""Every rule zgen knows, from all checkers, by code.

Model rules document themselves in their class docstrings, config rules in
their TOML entries, the trace's ZG290 in `zgen.trace_rule`, meta rules in
`zgen.noqa`. `zgen rule`, selection validation and the SARIF rule table all
read this one registry.

The model rules' classes are built on libcst, which costs a third of a second
to import, and the config rules' expressions are compiled by the solver; a
check needs only their codes (selection and `# noqa` validation), so those
come from the rule files' names and the rule TOML's `code` entries, and the
documentation is loaded on first use. User rule files (`--rules`) are
compiled at once, so that a bad one stops the run before anything is checked.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import zgen.model
from zgen.config import rule_codes as config_codes
from zgen.config import rule_infos as config_rules
from zgen.findings import RuleInfo
from zgen.noqa import META_RULES
from zgen.trace_rule import TRACE_RULE

__all__ = ["all_rules", "Rules"]

_RULE_FILE = re.compile(r"^zg(\d{3})_\w+\.py$")


class Rules(Mapping[str, RuleInfo]):
    """Rule infos by code, in code order; the model rules' and the built-in config rules' infos are loaded when
    one of them is first read."""

    def __init__(self, eager: Sequence[RuleInfo], config_codes: frozenset[str] = frozenset()) -> None:
        self._infos = {r.code: r for r in eager}
        self._model_loaded = False
        rules_dir = Path(zgen.model.__file__).parent / "rules"
        self._model_codes = {f"ZG{m.group(1)}" for p in rules_dir.iterdir() if (m := _RULE_FILE.match(p.name))}
        self._config_codes = config_codes - set(self._infos)  # built-in, not loaded yet
        self._codes = sorted(set(self._infos) | self._model_codes | self._config_codes)

    def __getitem__(self, code: str) -> RuleInfo:
        if code in self._model_codes and not self._model_loaded:
            self._load_model_rules()
        if code in self._config_codes:
            self._load_config_rules()
        return self._infos[code]

    def __iter__(self) -> Iterator[str]:
        return iter(self._codes)

    def __len__(self) -> int:
        return len(self._codes)

    def __contains__(self, code: object) -> bool:
        return code in self._model_codes or code in self._config_codes or code in self._infos

    def _load_config_rules(self) -> None:
        loaded = {r.code: r for r in config_rules()}
        if set(loaded) != self._config_codes:
            raise RuntimeError(f"config rule files name {sorted(self._config_codes)} but define {sorted(loaded)}")
        self._infos.update(loaded)
        self._config_codes = set()

    def _load_model_rules(self) -> None:
        loaded = {r.code: r for r in zgen.model.rule_infos()}
        if set(loaded) != self._model_codes:  # a rule file named for one code holding another
            raise RuntimeError(f"model rule files name {sorted(self._model_codes)} but define {sorted(loaded)}")
        self._infos.update(loaded)
        self._model_loaded = True


def all_rules(rule_files: Sequence[str] = ()) -> Rules:
    """Every rule by code, sorted by code. Loads no torch, runs no solver, and imports libcst or compiles the
    built-in config rules only when such a rule's documentation is read."""
    if rule_files:
        return Rules([*config_rules(rule_files), TRACE_RULE, *META_RULES])
    return Rules([TRACE_RULE, *META_RULES], config_codes())
