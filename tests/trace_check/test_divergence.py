"""Where two runs part: the last common line before they part for good, past detours both come back from."""

from __future__ import annotations

from zgen.trace_check.divergence import data_code, parting_line


def _lines(*numbers: int, call: str | None = None) -> list[tuple]:
    return [("m.py", n) for n in numbers] + ([(None, call)] if call else [])


def test_a_detour_both_runs_come_back_from_is_skipped():
    # rank 0 logs (line 3), both go on to line 4; line 5 decides which module runs next.
    ours = _lines(2, 3, 4, 5, 6, call="x")
    theirs = _lines(2, 4, 5, 7, call="y")
    assert parting_line(ours, theirs) == ("m.py", 5)


def test_a_detour_back_through_a_line_already_run_is_the_decision():
    # `if skip: continue` at line 31: one run goes back to the loop head (30) and calls the next layer.
    ours = _lines(30, 31, 32, call="layers.0")
    theirs = _lines(30, 31, 30, 31, 32, call="layers.1")
    assert parting_line(ours, theirs) == ("m.py", 31)


def test_the_same_lines_calling_different_modules_part_at_the_call():
    assert parting_line(_lines(20, call="experts.0"), _lines(20, call="experts.1")) == ("m.py", 20)


def test_data_code_by_statement(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("while x:\n    pass\nif x is None:\n    y()\nif x.any():\n    break\nif x.any():\n    y()\n")
    assert [data_code((str(src), n)) for n in (1, 3, 5, 7)] == ["ZG204", "ZG205", "ZG204", "ZG203"]
