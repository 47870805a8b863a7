"""The codes a check reads from the shipped rule files line by line are the codes TOML parsing finds."""

from __future__ import annotations

import tomllib

import pytest

from zgen.config.rule_files import builtin_codes, builtin_rule_files, shipped_codes


@pytest.mark.parametrize("path", builtin_rule_files(), ids=lambda p: p.rsplit("/", 1)[-1])
def test_shipped_file_codes_as_toml_reads_them(path):
    with open(path, "rb") as f:
        data = tomllib.load(f)
    expected = [e["code"] for t in ("rule", "code") for e in data.get(t, ()) if isinstance(e.get("code"), str)]
    with open(path, encoding="utf-8") as f:
        assert sorted(shipped_codes(f.read())) == sorted(expected)


def test_reader_follows_tables_and_strings():
    text = '''\
[[rule]]
code = "ZC001"  # a comment
doc = """
code = "ZC900"
"""
[rule.example]
code = "ZC901"
[[rule]]
list = [
  ["a"],
]
code = "ZC002"
[[code]]
 code = "ZC003"
[[other]]
code = "ZC903"
'''
    assert shipped_codes(text) == ["ZC001", "ZC002", "ZC003"]
    assert shipped_codes(text) == [e["code"] for t in ("rule", "code") for e in tomllib.loads(text).get(t, ())]


def test_builtin_codes_are_every_files_codes():
    assert builtin_codes() == builtin_codes(builtin_rule_files())
