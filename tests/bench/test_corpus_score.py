"""The corpus scorer's matching and reporting, on a synthetic package and a stand-in for zgen (no real zgen run)."""

from __future__ import annotations

import importlib.util
import json
import stat
import sys
from pathlib import Path

import pytest

SCORE = Path(__file__).resolve().parents[2] / "bench" / "corpus" / "score.py"
HEADER = "set\tpackage\tversion\tfile\tline\tfamily\tcode\tlabel\twhy\n"


@pytest.fixture(scope="module")
def score():
    spec = importlib.util.spec_from_file_location("corpus_score", SCORE)
    module = importlib.util.module_from_spec(spec)
    sys.modules["corpus_score"] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def _row(file: str, line: str, family: str, label: str, package: str = "toylib", set_: str = "dev") -> str:
    return f"{set_}\t{package}\t1.0\t{file}\t{line}\t{family}\t\t{label}\tsynthetic\n"


@pytest.fixture
def corpus(tmp_path):
    """A package toylib-1.0 with two files and a manifest of seven items over them."""
    pkg = tmp_path / "src" / "toylib-1.0" / "toylib"
    pkg.mkdir(parents=True)
    (pkg / "a.py").write_text("".join(f"x{n} = {n}\n" for n in range(1, 31)))
    (pkg / "b.py").write_text("".join(f"y{n} = {n}\n" for n in range(1, 31)))
    rows = [
        _row("toylib/a.py", "10", "ZG1", "hazard"),  # found: ZG103 spans 9-11
        _row("toylib/a.py", "20", "ZG1", "hazard"),  # missed: only a ZG3 finding is on line 20
        _row("toylib/a.py", "20", "ZG3", "safe"),  # flagged by that ZG301
        _row("toylib/a.py", "25", "ZG2", "safe"),  # clean: the ZG2 finding is on 24, one line off
        _row("toylib/b.py", "5-7", "ZG2", "hazard"),  # found: span overlaps the finding on 7
        _row("toylib/b.py", "12", "ZG3", "hazard"),  # missed: the ZG302 ends on 11
        _row("toylib/b.py", "15", "ZG1", "safe", set_="transformers"),  # other set
    ]
    (tmp_path / "manifest.tsv").write_text(HEADER + "".join(rows))
    return tmp_path


def _finding(path: Path, code: str, row: int, end_row: int | None = None) -> dict:
    return {"code": code, "filename": str(path), "location": {"row": row, "column": 1},
            "end_location": {"row": end_row or row, "column": 5}, "message": f"{code} here"}


def _fake_zgen(tmp_path: Path, findings: list[dict], fail_on: str = "") -> str:
    """An executable standing in for `python -m zgen check`: prints `findings`, or dies on a file named `fail_on`."""
    script = tmp_path / "fake-python"
    script.write_text(
        "#!/bin/sh\n"
        + (f'case "$*" in *{fail_on}*) echo "Traceback (most recent call last):" >&2; exit 2;; esac\n' if fail_on else "")
        + f"cat <<'EOF'\n{json.dumps(findings)}\nEOF\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def _findings(corpus: Path) -> list[dict]:
    a = corpus / "src" / "toylib-1.0" / "toylib" / "a.py"
    b = corpus / "src" / "toylib-1.0" / "toylib" / "b.py"
    return [
        _finding(a, "ZG103", 9, 11),
        _finding(a, "ZG301", 20),
        _finding(a, "ZG201", 24),
        _finding(a, "ZG102", 28),  # on no labelled line
        _finding(b, "ZG203", 7),
        _finding(b, "ZG302", 10, 11),
        _finding(b, "ZG901", 1),  # not a scored family
    ]


def test_scores_per_family_and_total(score, corpus, capsys):
    python = _fake_zgen(corpus, _findings(corpus))
    argv = ["--src", str(corpus / "src"), "--manifest", str(corpus / "manifest.tsv"), "--zgen-python", python, "--json"]
    assert score.main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    fam = data["family"]
    assert (fam["ZG1"]["found"], fam["ZG1"]["hazards"], fam["ZG1"]["safe"]) == (1, 2, 0)
    assert (fam["ZG2"]["found"], fam["ZG2"]["hazards"], fam["ZG2"]["clean"], fam["ZG2"]["safe"]) == (1, 1, 1, 1)
    assert (fam["ZG3"]["found"], fam["ZG3"]["hazards"], fam["ZG3"]["clean"], fam["ZG3"]["safe"]) == (0, 1, 0, 1)
    assert data["total"]["recall"] == pytest.approx(2 / 4)
    assert data["total"]["clean_rate"] == pytest.approx(1 / 2)
    # ZG102 on 28 and ZG302 on 10-11 hit no item; ZG201 on 24 is one line off its item; ZG901 is no family
    assert data["unlabelled_findings"] == {"ZG1": 1, "ZG2": 1, "ZG3": 1}


def test_set_all_includes_the_transformers_items(score, corpus, capsys):
    python = _fake_zgen(corpus, _findings(corpus))
    argv = ["--src", str(corpus / "src"), "--manifest", str(corpus / "manifest.tsv"), "--zgen-python", python,
            "--json", "--set", "all"]
    assert score.main(argv) == 0
    assert json.loads(capsys.readouterr().out)["family"]["ZG1"]["clean"] == 1


def test_show_misses_lists_missed_and_flagged(score, corpus, capsys):
    python = _fake_zgen(corpus, _findings(corpus))
    argv = ["--src", str(corpus / "src"), "--manifest", str(corpus / "manifest.tsv"), "--zgen-python", python,
            "--show-misses"]
    assert score.main(argv) == 0
    out = capsys.readouterr().out
    assert "toylib/a.py:20  synthetic" in out and "toylib/b.py:12" in out
    assert "ZG301 toylib/toylib/a.py:20" in out
    assert "toylib/a.py:10" not in out


def test_missing_package_is_named(score, corpus, capsys):
    (corpus / "manifest.tsv").write_text(HEADER + _row("other/x.py", "1", "ZG1", "safe", package="otherlib"))
    argv = ["--src", str(corpus / "src"), "--manifest", str(corpus / "manifest.tsv")]
    assert score.main(argv) == 2
    assert "otherlib==1.0 is not under" in capsys.readouterr().err


@pytest.mark.parametrize(("line", "family", "message"), [
    ("0", "ZG1", "line '0'"), ("7-3", "ZG1", "line '7-3'"), ("4", "ZG4", "family 'ZG4'"),
])
def test_bad_rows_are_named(score, corpus, capsys, line, family, message):
    (corpus / "manifest.tsv").write_text(HEADER + _row("toylib/a.py", "1", "ZG1", "safe")
                                         + _row("toylib/a.py", line, family, "hazard"))
    assert score.main(["--src", str(corpus / "src"), "--manifest", str(corpus / "manifest.tsv")]) == 2
    err = capsys.readouterr().err
    assert "manifest.tsv:3:" in err and message in err


def test_a_file_zgen_fails_on_is_named_and_left_out(score, corpus, capsys):
    python = _fake_zgen(corpus, _findings(corpus), fail_on="b.py")
    argv = ["--src", str(corpus / "src"), "--manifest", str(corpus / "manifest.tsv"), "--zgen-python", python, "--json"]
    assert score.main(argv) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert "zgen failed on" in captured.err and "toylib/b.py: exit 2" in captured.err
    assert data["unscored_items"] == 2  # the two dev items of b.py
    assert (data["total"]["found"], data["total"]["hazards"]) == (1, 2)  # a.py's hazards only
    assert list(data["failed_files"]) == [str((corpus / "src/toylib-1.0/toylib/b.py").resolve())]


def test_zgen_failing_everywhere_is_bad_input(score, corpus, capsys):
    python = _fake_zgen(corpus, [], fail_on=".py")
    argv = ["--src", str(corpus / "src"), "--manifest", str(corpus / "manifest.tsv"), "--zgen-python", python]
    assert score.main(argv) == 2
    assert "zgen failed on every file" in capsys.readouterr().err


def test_an_interpreter_without_zgen_is_bad_input(score, corpus, capsys):
    argv = ["--src", str(corpus / "src"), "--manifest", str(corpus / "manifest.tsv"), "--zgen-python", "/bin/false"]
    assert score.main(argv) == 2
    assert "cannot import zgen" in capsys.readouterr().err


def test_crash_check_names_the_failing_file(score, corpus, capsys):
    python = _fake_zgen(corpus, [], fail_on="b.py")
    argv = ["--src", str(corpus / "src"), "--manifest", str(corpus / "manifest.tsv"), "--zgen-python", python,
            "--crash-check"]
    assert score.main(argv) == 0
    out = capsys.readouterr().out
    assert "2 files in 1 directories, 1 failed" in out
    assert "toylib/b.py: exit 2" in out and "a.py:" not in out


REVIEW_HEADER = "package\tversion\tfile\tline\tcode\tverdict\twhy\n"


def test_dump_unlabelled_writes_the_unscored_findings(score, corpus, capsys):
    python = _fake_zgen(corpus, _findings(corpus))
    out = corpus / "unlabelled.tsv"
    argv = ["--src", str(corpus / "src"), "--manifest", str(corpus / "manifest.tsv"), "--zgen-python", python,
            "--dump-unlabelled", str(out), "--reviewed", str(corpus / "absent.tsv")]
    assert score.main(argv) == 0
    rows = out.read_text().splitlines()
    assert rows[0] == "package\tversion\tfile\tline\tcode\tmessage"
    assert rows[1:] == ["toylib\t1.0\ttoylib/a.py\t24\tZG201\tZG201 here",
                        "toylib\t1.0\ttoylib/a.py\t28\tZG102\tZG102 here",
                        "toylib\t1.0\ttoylib/b.py\t10\tZG302\tZG302 here"]


def test_precision_counts_labelled_items_and_reviewed_findings(score, corpus, capsys):
    python = _fake_zgen(corpus, _findings(corpus))
    reviewed = corpus / "reviewed.tsv"
    reviewed.write_text(REVIEW_HEADER + "toylib\t1.0\ttoylib/a.py\t28\tZG102\tfp\tmetadata only\n"
                        + "toylib\t1.0\ttoylib/b.py\t10\tZG302\ttp\treal\n")
    argv = ["--src", str(corpus / "src"), "--manifest", str(corpus / "manifest.tsv"), "--zgen-python", python,
            "--json", "--reviewed", str(reviewed)]
    assert score.main(argv) == 0
    precision = json.loads(capsys.readouterr().out)["precision_judged_after_output"]
    # ZG1: found hazard a.py:10 (tp) + reviewed fp on 28; ZG2: found b.py:5-7, ZG201 on 24 not judged;
    # ZG3: flagged safe a.py:20 (fp) + reviewed tp on b.py:10
    assert (precision["ZG1"]["tp"], precision["ZG1"]["fp"], precision["ZG1"]["precision"]) == (1, 1, 0.5)
    assert (precision["ZG2"]["tp"], precision["ZG2"]["fp"], precision["ZG2"]["unjudged"]) == (1, 0, 1)
    assert (precision["ZG3"]["tp"], precision["ZG3"]["fp"]) == (1, 1)
    argv.remove("--json")
    assert score.main(argv) == 0
    assert "JUDGED AFTER SEEING zgen's OUTPUT" in capsys.readouterr().out


@pytest.mark.parametrize(("row", "message"), [
    ("toylib\t1.0\ttoylib/a.py\t28\tZG102\tmaybe\twhy\n", "verdict 'maybe'"),
    ("toylib\t1.0\ttoylib/a.py\tx\tZG102\ttp\twhy\n", "line 'x'"),
    ("toylib\t1.0\ttoylib/a.py\t28\tZG102\ttp\n", "expected 7"),
])
def test_bad_reviewed_rows_are_named(score, corpus, capsys, row, message):
    reviewed = corpus / "reviewed.tsv"
    reviewed.write_text(REVIEW_HEADER + row)
    argv = ["--src", str(corpus / "src"), "--manifest", str(corpus / "manifest.tsv"), "--reviewed", str(reviewed)]
    assert score.main(argv) == 2
    err = capsys.readouterr().err
    assert "reviewed.tsv:2:" in err and message in err
