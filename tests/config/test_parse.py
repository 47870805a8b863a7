"""The loader accepts exactly what DeepSpeed's hjson parser accepts, and knows where every key is."""

from __future__ import annotations

import math

import hjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zgen.config.parse import MAX_DEPTH, parse, to_plain

SEED = """{
  // the seed config, hjson style
  "train_micro_batch_size_per_gpu": 1,
  zero_optimization: {
    stage: 3
    reduce_bucket_size: 5e7   # floats with an integral value become ints
    offload_param: {device: "cpu"}
  }
}
"""


def test_positions_of_keys_are_one_based():
    root = parse(SEED).root
    mbs = root.get("train_micro_batch_size_per_gpu")
    assert (mbs.key_span.line, mbs.key_span.column) == (3, 3)
    zero = root.get("zero_optimization").value
    stage = zero.get("stage")
    assert (stage.key_span.line, stage.key_span.column, stage.key_span.end_column) == (5, 5, 10)
    assert zero.get("offload_param").value.get("device").key_span.line == 7


def test_hjson_values_match_hjson():
    assert to_plain(parse(SEED).root) == hjson.loads(SEED)
    assert to_plain(parse(SEED).root)["zero_optimization"]["reduce_bucket_size"] == 50_000_000


def test_quoteless_string_runs_to_end_of_line():
    # `{device: cpu}` on one line: hjson reads the quoteless string `cpu}` to the end of the line.
    parsed = parse(SEED.replace('{device: "cpu"}', "{device: cpu}"))
    assert parsed.root is None
    assert (parsed.problem.span.line, parsed.problem.span.column) == (7, 29)
    assert "`cpu}`" in parsed.problem.message


def test_duplicates_are_listed_with_both_positions():
    parsed = parse('{"a": 1,\n "b": {"c": 1, "c": 2},\n "a": 3}')
    dups = {d.path: d for d in parsed.duplicates}
    assert set(dups) == {"a", "b.c"}
    assert (dups["a"].first.line, dups["a"].second.line) == (1, 3)
    assert to_plain(parsed.root)["a"] == 3


@pytest.mark.parametrize(
    "text",
    ["{", '{"a": }', '{"a" 1}', '{"a": 1}}', "[1, 2", '{"a": "\\x"}', '{"a": 1e400}', "{/* open", '{"a": 01}'],
)
def test_malformed_text_is_a_problem_with_a_position(text):
    parsed = parse(text)
    assert parsed.root is None
    assert parsed.problem.span.line >= 1 and parsed.problem.span.column >= 1
    with pytest.raises(Exception):
        hjson.loads(text)


def test_deep_nesting_stops_cleanly():
    parsed = parse("[" * 5000 + "]" * 5000)
    assert parsed.root is None and parsed.problem.too_deep
    assert parse("[" * MAX_DEPTH + "]" * MAX_DEPTH).root is not None


def test_huge_number_is_flagged_as_overflow():
    parsed = parse('{"x": 1e400}')
    assert parsed.problem.overflow


# -- differential: random hjson-ish text must parse to what hjson gives, or fail where hjson fails ----------

_ATOMS = ['{', '}', '[', ']', ',', ':', ' ', '\n', '"a"', "'b'", 'a', 'key', '1', '5e7', '-0', '1.5', '1e400', 'true',
          'false', 'null', '#c', '//c', '/*c*/', '\t', '"x\\n"', '"\\u00e9"', '"\\q"', "'''", 'x y', '0.5e1', '1e10',
          '"', "'", '\\', '/', '*', '\r\n', 'cpu', '-', '+1', '01']


def _reference(text: str):
    try:
        return True, hjson.loads(text)
    except Exception:  # hjson fails with its own error, IndexError, OverflowError, ...
        return False, None


def _normal(v):
    if isinstance(v, dict):
        return {k: _normal(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_normal(x) for x in v]
    return (type(v).__name__, v)


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(_ATOMS), max_size=14), st.booleans())
def test_agrees_with_hjson(atoms, braces):
    text = "".join(atoms)
    if braces:
        text = "{" + text + "}"
    ok, expected = _reference(text)
    parsed = parse(text)
    assert (parsed.root is not None) == ok, text
    if ok:
        assert _normal(to_plain(parsed.root)) == _normal(expected), text


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_never_raises_on_any_text(text):
    parsed = parse(text)
    assert (parsed.root is None) != (parsed.problem is None)


def test_float_conversion_follows_hjson():
    plain = to_plain(parse("{a: 1.0, b: 1e10, c: 2.5, d: -0.0, e: 123456789012345678901234567890}").root)
    assert plain == {"a": 1, "b": 1e10, "c": 2.5, "d": 0, "e": 123456789012345678901234567890}
    assert isinstance(plain["b"], float) and not math.isinf(plain["b"])
