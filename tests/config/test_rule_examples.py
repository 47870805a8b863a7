"""Every config rule carries a config that triggers it and one that does not (`[[rule.example]]` in rules/*.toml)."""

from __future__ import annotations

import pytest

from zc_helpers import check, codes
from zgen.solver.rules import load_rules

RULES = load_rules()


def _examples():
    for rule in RULES.rules:
        for i, ex in enumerate(rule.examples):
            yield pytest.param(rule.code, ex, id=f"{rule.code}-{'bad' if ex.bad else 'good'}-{i}")
    for doc in RULES.docs:
        for i, ex in enumerate(doc.examples):
            yield pytest.param(doc.code, ex, id=f"{doc.code}-{'bad' if ex.bad else 'good'}-{i}")


@pytest.mark.parametrize(("code", "example"), list(_examples()))
def test_example(code, example):
    report = check(example.text, **dict(example.facts))
    found = codes(report)
    if example.bad:
        assert code in found, f"{code} not reported for {example.text!r}; got {found}"
        hit = next(f for f in report.findings if f.code == code)
        assert hit.line >= 1 and hit.column >= 1
        assert "{" not in hit.message, f"unfilled template: {hit.message}"
    else:
        assert code not in found, f"{code} reported for its good example: {report.findings}"


# Codes whose trigger cannot be written as TOML text or needs facts the harness tests elsewhere.
_TESTED_ELSEWHERE = {"ZC001", "ZC004", "ZC601", "ZC901"}


def test_every_code_has_a_bad_and_a_good_example():
    missing = []
    for code in {i.code for i in RULES.infos()} - _TESTED_ELSEWHERE:
        examples = [ex for r in RULES.rules if r.code == code for ex in r.examples]
        examples += [ex for d in RULES.docs if d.code == code for ex in d.examples]
        kinds = {ex.bad for ex in examples}
        if True not in kinds:
            missing.append(f"{code}: no bad example")
    assert not missing, missing


def test_every_rule_has_a_good_example():
    lacking = sorted({r.code for r in RULES.rules} - {r.code for r in RULES.rules for ex in r.examples if not ex.bad})
    assert not lacking
