"""Every rule zgen knows, from all checkers, by code.

Model rules document themselves in their class docstrings, config rules in
their TOML entries, the trace's ZG290 in `zgen.plan.trace_rule`, meta rules in
`zgen.noqa`. `zgen rule`, selection validation and the SARIF rule table all
read this one registry.
"""

from __future__ import annotations

from collections.abc import Sequence

from zgen.findings import RuleInfo
from zgen.plan.trace_rule import TRACE_RULE

__all__ = ["all_rules"]


def all_rules(rule_files: Sequence[str] = ()) -> dict[str, RuleInfo]:
    """Rule infos by code, sorted by code. Loads no torch and runs no solver."""
    from zgen.config import rule_infos as config_rules
    from zgen.model import rule_infos as model_rules
    from zgen.noqa import META_RULES

    infos = [*model_rules(), *config_rules(rule_files), TRACE_RULE, *META_RULES]
    return {r.code: r for r in sorted(infos, key=lambda r: r.code)}
