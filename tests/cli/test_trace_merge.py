"""One report from the static and the trace check: a hazard seen by both is one finding, marked confirmed."""

import json
from pathlib import Path

from zgen.checker import check_paths
from zgen.findings import Finding, Severity, Source, merge_trace_findings
from zgen.launch import LaunchFacts
from zgen.report import ReportContext, render
from zgen.settings import Settings


def _f(code, line, path="m.py", end_line=None, message="m"):
    return Finding(code=code, message=message, path=path, line=line, column=1,
                   end_line=end_line or line, end_column=2, severity=Severity.ERROR)


def test_same_family_same_statement_is_one_finding_marked_confirmed():
    static = [_f("ZG103", 10, end_line=12)]
    trace = [_f("ZG101", 11, message="write seen")]
    merged = merge_trace_findings(static, trace)
    assert len(merged) == 1
    assert merged[0].code == "ZG103"  # the static finding's code and help are kept
    assert merged[0].source is Source.BOTH
    assert merged[0].message.endswith("(confirmed by the trace)")


def test_a_trace_statement_over_many_lines_confirms_a_static_finding_on_an_inner_line():
    static = [_f("ZG102", 15)]  # the `.shape` in the fifth line of a call
    trace = [_f("ZG102", 10, end_line=18)]  # the statement, from its first line
    merged = merge_trace_findings(static, trace)
    assert [(f.line, f.source) for f in merged] == [(15, Source.BOTH)]
    apart = merge_trace_findings(static, [_f("ZG102", 3, end_line=8)])  # ends more than 3 lines before
    assert [(f.line, f.source) for f in apart] == [(3, Source.TRACE), (15, Source.STATIC)]


def test_other_family_or_file_or_line_stays_separate_and_says_trace():
    static = [_f("ZG103", 10)]
    trace = [_f("ZG201", 10), _f("ZG101", 10, path="other.py"), _f("ZG101", 40)]
    merged = merge_trace_findings(static, trace)
    assert [(f.code, f.path, f.line, f.source) for f in merged] == [
        ("ZG103", "m.py", 10, Source.STATIC),
        ("ZG201", "m.py", 10, Source.TRACE),
        ("ZG101", "m.py", 40, Source.TRACE),
        ("ZG101", "other.py", 10, Source.TRACE),
    ]
    assert all(f.message.endswith("(seen by the trace)") for f in merged if f.source is Source.TRACE)


def test_a_statement_seen_many_times_by_the_trace_is_reported_once():
    merged = merge_trace_findings([], [_f("ZG109", 7), _f("ZG102", 7), _f("ZG109", 8)])
    assert [(f.code, f.line) for f in merged] == [("ZG109", 7), ("ZG109", 8)]


def test_source_survives_the_cache_round_trip_and_reaches_json():
    f = merge_trace_findings([], [_f("ZG201", 3)])[0]
    assert Finding.from_dict(f.to_dict()) == f
    out = json.loads(render("json", [f], ReportContext(rules={}, version="0", root=Path.cwd())))
    assert out[0]["source"] == "trace"


def test_sarif_fingerprint_ignores_the_trace_mark(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("x = 1\n")
    ctx = ReportContext(rules={}, version="0", root=tmp_path)
    plain = _f("ZG103", 1, path=str(src))
    marked = merge_trace_findings([plain], [_f("ZG101", 1, path=str(src))])[0]
    fp = [json.loads(render("sarif", [f], ctx))["runs"][0]["results"][0]["partialFingerprints"] for f in (plain, marked)]
    assert fp[0] == fp[1]


def test_check_paths_applies_noqa_to_a_file_only_the_trace_reached(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "model.py").write_text("import torch\n")
    lib = tmp_path / "lib.py"
    lib.write_text("a = 1  # noqa: ZG201\nb = 2  # noqa: ZG101\nc = 3\n")
    trace = [_f("ZG201", 1, path="lib.py"), _f("ZG201", 3, path="lib.py")]
    result = check_paths(["model.py"], Settings(root=tmp_path), LaunchFacts(),
                         use_cache=False, trace_findings=trace)
    # line 1 is suppressed; the unused ZG101 directive of a file the static rules never read is not reported
    assert [(f.code, f.path, f.line) for f in result.findings] == [("ZG201", "lib.py", 3)]
