import json

from zgen.findings import Finding, Related, RuleInfo, Severity
from zgen.report import ReportContext, render

RULES = {
    "ZG201": RuleInfo(code="ZG201", name="rank-gated-module-call", summary="A module call depends on the rank.",
                      doc="## What it does\nFlags rank gates.", severity=Severity.ERROR, family="ZG2"),
    "ZC101": RuleInfo(code="ZC101", name="batch-arithmetic", summary="Batch sizes disagree.",
                      doc="## What it does\nBatch arithmetic.", severity=Severity.ERROR, family="ZC1"),
}
SRC = {"m.py": "import torch\nif rank == 0:\n    x = self.block(x)\n"}
F1 = Finding(code="ZG201", message="`self.block` runs only on rank 0", path="m.py", line=3, column=9,
             end_line=3, end_column=22, help="run `self.block` on every rank")
F2 = Finding(code="ZC101", message="`train_batch_size` (16) != 1 x 2 x 4 = 8", path="ds.json", line=2, column=3,
             end_line=2, end_column=21, severity=Severity.WARNING, key="train_batch_size",
             related=(Related(path="ds.json", line=3, column=3, message="`gradient_accumulation_steps` is 2"),))


def ctx():
    return ReportContext(rules=RULES, sources=SRC, version="0.1.0")


def test_concise_is_one_line_per_finding_with_1_based_positions():
    out = render("concise", [F1], ctx())
    assert out.splitlines() == ["m.py:3:9: ZG201 `self.block` runs only on rank 0", "Found 1 finding (1 error)."]


def test_full_has_code_frame_and_help():
    out = render("full", [F1], ctx())
    assert "3 |     x = self.block(x)" in out
    assert "  |         ^^^^^^^^^^^^^ ZG201" in out
    assert "= help: run `self.block` on every rank" in out


def test_json_is_ruff_shaped():
    doc = json.loads(render("json", [F1, F2], ctx()))
    assert doc[0]["code"] == "ZG201"
    assert doc[0]["location"] == {"row": 3, "column": 9}
    assert doc[0]["end_location"] == {"row": 3, "column": 22}
    assert doc[0]["filename"].endswith("m.py")
    assert doc[1]["severity"] == "warning" and doc[1]["key"] == "train_batch_size"
    assert {"fix", "url", "message", "noqa_row"} <= set(doc[0])


def test_sarif_has_rules_regions_and_fingerprints():
    doc = json.loads(render("sarif", [F1, F2], ctx()))
    assert doc["version"] == "2.1.0"
    run = doc["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == ["ZC101", "ZG201"]
    assert rules[1]["fullDescription"]["text"].startswith("## What it does")
    r1 = next(r for r in run["results"] if r["ruleId"] == "ZG201")
    assert r1["locations"][0]["physicalLocation"]["region"] == {"startLine": 3, "startColumn": 9, "endLine": 3, "endColumn": 22}
    assert rules[r1["ruleIndex"]]["id"] == "ZG201"
    assert r1["partialFingerprints"]["zgenFingerprint/v1"]
    r2 = next(r for r in run["results"] if r["ruleId"] == "ZC101")
    assert r2["level"] == "warning" and r2["relatedLocations"][0]["message"]["text"] == "`gradient_accumulation_steps` is 2"


def test_sarif_fingerprint_survives_line_moves():
    src2 = {"m.py": "import torch\n\n\nif rank == 0:\n    x = self.block(x)\n"}
    moved = Finding(code=F1.code, message=F1.message, path=F1.path, line=5, column=9, end_line=5, end_column=22)
    fp = lambda c, f: json.loads(render("sarif", [f], c))["runs"][0]["results"][0]["partialFingerprints"]
    assert fp(ctx(), F1) == fp(ReportContext(rules=RULES, sources=src2), moved)


def test_github_annotations_escape():
    out = render("github", [F2], ctx())
    assert out.startswith("::warning file=ds.json,line=2,col=3,endLine=2,endColumn=21,title=zgen (ZC101)::")
    assert "%0Ahelp" not in out  # F2 has no help
    f = Finding(code="ZG201", message="a,b:c%d", path="m.py", line=1, column=1, end_line=1, end_column=2, help="x")
    assert render("github", [f], ctx()).strip().endswith("::m.py:1:1: ZG201 a,b:c%25d%0Ahelp: x")


def test_output_is_deterministic():
    assert render("sarif", [F1, F2], ctx()) == render("sarif", [F1, F2], ctx())
