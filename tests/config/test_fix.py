"""`zgen check --fix` / `--diff`: the solver's smallest fix as text edits that keep formatting and comments."""

from __future__ import annotations

import json

from zc_helpers import check
from zgen.config.edit import apply_edits, edits_for
from zgen.config.parse import parse
from zgen.solver.fix import Change

_HJSON = """// ZeRO-3 for 4 GPUs
{
  # the global batch
  train_batch_size: 256
  train_micro_batch_size_per_gpu: 4  // fits 80 GB
  gradient_accumulation_steps: 8
  zero_optimization: {
    stage: 3
  }
}
"""


def _apply(text: str, changes, written=None) -> str:
    edits = edits_for(parse(text).root, text, changes, written or {})
    return apply_edits(text, [edits])[0]


def test_set_replaces_only_the_value():
    text = '{\n  "a": 5e7, // big\n  "b": 1\n}\n'
    assert _apply(text, [Change("a", "set", 100)]) == '{\n  "a": 100, // big\n  "b": 1\n}\n'


def test_remove_takes_the_line_and_the_right_comma():
    text = '{\n  "a": 1,\n  "b": 2\n}\n'
    assert _apply(text, [Change("b", "remove")]) == '{\n  "a": 1\n}\n'
    assert _apply(text, [Change("a", "remove")]) == '{\n  "b": 2\n}\n'
    assert json.loads(_apply('{"a": 1, "b": 2, "c": 3}', [Change("b", "remove")])) == {"a": 1, "c": 3}


def test_add_follows_the_section_style():
    text = '{\n  "zero_optimization": {\n    "stage": 3\n  }\n}\n'
    out = _apply(text, [Change("zero_optimization.offload_optimizer.device", "add", "cpu")])
    assert out == '{\n  "zero_optimization": {\n    "stage": 3,\n    "offload_optimizer": {"device": "cpu"}\n  }\n}\n'
    hjson = _apply(_HJSON, [Change("zero_optimization.reduce_bucket_size", "add", 1000)])
    assert "    stage: 3\n    reduce_bucket_size: 1000\n  }" in hjson
    assert json.loads(_apply('{"a": 1}', [Change("b", "add", True)])) == {"a": 1, "b": True}


def test_hjson_fix_keeps_comments_and_rechecks_clean():
    report = check(_HJSON, world_size=4, path="ds.hjson")
    (f,) = [f for f in report.findings if f.code == "ZC101"]
    assert f.fix is not None and f.fix.applicability == "safe"
    fixed, applied = apply_edits(_HJSON, [f.fix.edits])
    assert applied == 1
    assert fixed.count("//") == _HJSON.count("//") and "# the global batch" in fixed
    assert check(fixed, world_size=4, path="ds.hjson").findings == ()


def test_an_ambiguous_fix_is_offered_but_not_safe():
    # fp16 and bf16 both on: turning either off is an equally small fix.
    report = check('{"train_batch_size": 8, "fp16": {"enabled": true}, "bf16": {"enabled": true}}', world_size=1)
    (f,) = [f for f in report.findings if f.code == "ZC201"]
    assert f.fix is not None and f.fix.applicability == "unsafe"


def test_overlapping_fixes_apply_once():
    text = '{"a": 1}'
    edits = edits_for(parse(text).root, text, [Change("a", "set", 2)], {})
    other = edits_for(parse(text).root, text, [Change("a", "set", 3)], {})
    assert apply_edits(text, [edits, other]) == ('{"a": 2}', 1)


def test_fix_and_diff_through_main(zgen, tmp_path):
    path = tmp_path / "ds.hjson"
    path.write_text(_HJSON)
    code, out, _ = zgen("check", "ds.hjson", "--world-size", "4", "--diff", cwd=tmp_path)
    assert code == 1 and "-  gradient_accumulation_steps: 8\n+  gradient_accumulation_steps: 16" in out
    assert path.read_text() == _HJSON
    code, out, err = zgen("check", "ds.hjson", "--world-size", "4", "--fix", cwd=tmp_path)
    assert code == 0 and "Fixed 1 finding." in err
    assert "gradient_accumulation_steps: 16" in path.read_text() and "// fits 80 GB" in path.read_text()
    code, out, _ = zgen("check", "ds.hjson", "--world-size", "4", "--output-format", "json", cwd=tmp_path)
    assert code == 0 and json.loads(out) == []


def test_json_output_carries_the_edit(zgen, tmp_path):
    (tmp_path / "ds.json").write_text('{"train_batch_size": 256, "train_micro_batch_size_per_gpu": 4,\n'
                                      ' "gradient_accumulation_steps": 8}\n')
    _, out, _ = zgen("check", "ds.json", "--world-size", "4", "--output-format", "json", cwd=tmp_path)
    (item,) = json.loads(out)
    assert item["fix"]["applicability"] == "safe"
    assert item["fix"]["edits"] == [{"content": "16", "location": {"row": 2, "column": 33},
                                     "end_location": {"row": 2, "column": 34}}]
    _, out, _ = zgen("check", "ds.json", "--world-size", "4", "--output-format", "sarif", cwd=tmp_path)
    (result,) = json.loads(out)["runs"][0]["results"]
    assert result["fixes"][0]["artifactChanges"][0]["replacements"][0]["insertedContent"]["text"] == "16"


def test_a_warnings_fix_is_offered_not_applied():
    report = check('{"train_batch_size": 8, "zero_optimization": {"stage": 3, "stage3_max_live_parameters": 0}}',
                   world_size=1)
    (f,) = [f for f in report.findings if f.code == "ZC309"]
    assert f.severity.value == "warning" and f.fix is not None and f.fix.applicability == "unsafe"


def test_a_typo_in_a_strict_section_is_renamed_by_fix():
    text = '{\n  "train_batch_size": 8,\n  "zero_optimization": {"stage": 3, "overlap_com": true}\n}\n'
    (f,) = [f for f in check(text, world_size=1).findings if f.code == "ZC010"]
    assert f.fix.applicability == "safe" and f.fix.message == "rename `overlap_com` to `overlap_comm`"
    fixed, _ = apply_edits(text, [f.fix.edits])
    assert '"overlap_comm": true' in fixed and check(fixed, world_size=1).findings == ()


def test_renaming_an_ignored_key_is_offered_only_and_never_onto_a_written_key():
    (f,) = [f for f in check('{"train_batch_size": 8, "gradient_clippin": 1.0}', world_size=1).findings
            if f.code == "ZC011"]
    assert f.fix.applicability == "unsafe"
    both = check('{"train_batch_size": 8, "zero_optimization": {"stage": 3, "stag": 2}}', world_size=1)
    assert [f.fix for f in both.findings if f.code == "ZC010"] == [None]
