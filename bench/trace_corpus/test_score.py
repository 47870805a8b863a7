"""score.py's parsing and matching, on hand-written fake zgen JSON (zgen never runs here)."""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import score  # noqa: E402

MANIFEST = """case\tpackage\tversion\tfile\tline\tfamily\tlabel\twhy\talt
a\tpkg\t1\tpkg/mod.py\t100\tZG2\thazard\tw\tpkg/helper.py:7
a\tpkg\t1\tpkg/mod.py\t200\tZG1\thazard\tw\t
b\tpkg\t1\tcases/b.py\t20\tZG3\thazard\tw\t
c\tpkg\t1\t\t\t\tclean\tw\t
d\tpkg\t1\t\t\t\tclean\tw\t
"""


def finding(code, filename, row, severity="error"):
    return {"code": code, "filename": filename, "location": {"row": row, "column": 1}, "severity": severity,
            "message": "m"}


def test_matching(tmp_path):
    (tmp_path / "manifest.tsv").write_text(MANIFEST)
    rows = score.load_manifest(tmp_path / "manifest.tsv")
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.json").write_text(json.dumps([
        finding("ZG203", "/venv/site-packages/pkg/helper.py", 9),     # alt only: lenient hit
        finding("ZG109", "/venv/site-packages/pkg/mod.py", 203),      # +3: hit
        finding("ZG301", "/venv/site-packages/pkg/mod.py", 200),      # wrong family: unmatched
        finding("ZG101", "/venv/site-packages/xpkg/mod.py", 200),     # not a path-component suffix: unmatched
    ]))
    (out / "b.json").write_text(json.dumps([finding("ZG302", "/r/bench/trace_corpus/cases/b.py", 24)]))  # +4: miss
    (out / "c.json").write_text(json.dumps([finding("ZG201", "/x/y.py", 3, "info"), finding("ZC101", "/x", 1)]))
    (out / "d.json").write_text(json.dumps([finding("ZG105", "/x/y.py", 3, "warning")]))
    outcomes = {c: score.read_case(out, c) for c in "abcd"}
    result = score.score(rows, outcomes)
    fam = result["families"]
    assert (fam["ZG2"]["strict"], fam["ZG2"]["lenient"], fam["ZG2"]["total"]) == (0, 1, 1)
    assert (fam["ZG1"]["strict"], fam["ZG1"]["total"]) == (1, 1)
    assert (fam["ZG3"]["lenient"], fam["ZG3"]["total"]) == (0, 1)
    assert result["clean"] == [1, 2]  # c has only an info and a non-ZG finding; d has a ZG1 warning
    unmatched = {(u["case"], u["code"]) for u in result["unmatched"]}
    assert unmatched == {("a", "ZG301"), ("a", "ZG101"), ("b", "ZG302"), ("c", "ZG201"), ("d", "ZG105")}


def test_bad_output_is_an_error():
    assert score.parse_output("a", 2, "[]").error == "exit status 2"
    assert "no JSON" in score.parse_output("a", 1, "Traceback").error
    assert score.parse_output("a", 1, "[]").findings == []


def test_command_is_the_evaluation_command():
    cmd = score.case_command(["zgen"], "x", True)
    assert cmd == ["zgen", "check", "--trace", "--model", "cases/x.py:build_model", "--inputs", "cases/x.py:inputs",
                   "--entry", "cases/x.py:entry", "--config", "ds.json", "--world-size", "2", "--seq-len", "16",
                   "--output-format", "json"]
    assert "--entry" not in score.case_command(["zgen"], "x", False)


def test_case_sets(tmp_path, monkeypatch):
    assert score.set_root(None) == score.HERE
    (tmp_path / "other" / "cases").mkdir(parents=True)
    (tmp_path / "other" / "manifest.tsv").write_text(MANIFEST)
    (tmp_path / "other" / "cases" / "a.py").write_text("def build_model():\n    pass\n\ndef entry(model, batch):\n    pass\n")
    (tmp_path / "bare").mkdir()
    monkeypatch.setattr(score, "HERE", tmp_path)
    root = score.set_root("other")
    assert root == tmp_path / "other"
    assert score.has_entry("a", root)
    try:
        score.set_root("bare")
    except SystemExit as e:
        assert "not a case set" in str(e)
    else:
        raise AssertionError("a directory without manifest.tsv and cases/ is not a case set")
