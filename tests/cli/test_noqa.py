from zgen.findings import Finding
from zgen.noqa import apply_noqa, parse_directives

KNOWN = {"ZG101", "ZG201", "ZG902", "ZG903"}


def _f(code, line):
    return Finding(code=code, message="m", path="m.py", line=line, column=1, end_line=line, end_column=2)


def test_directive_with_code_suppresses_only_that_code():
    src = "a = 1  # noqa: ZG101\nb = 2\n"
    kept = apply_noqa("m.py", src, [_f("ZG101", 1), _f("ZG201", 1), _f("ZG101", 2)], KNOWN, lambda c: True)
    assert [(f.code, f.line) for f in kept] == [("ZG201", 1), ("ZG101", 2)]


def test_bare_noqa_never_hides_a_zgen_finding():
    src = "a = 1  # noqa\nb = 2  # noqa: E501\n"
    kept = apply_noqa("m.py", src, [_f("ZG101", 1), _f("ZG101", 2)], KNOWN, lambda c: True)
    assert [f.line for f in kept] == [1, 2]


def test_mixed_codes_with_other_linters():
    src = "a = 1  # noqa: E501, ZG101\n"
    assert apply_noqa("m.py", src, [_f("ZG101", 1)], KNOWN, lambda c: True) == []


def test_unused_and_unknown_codes_are_reported():
    src = "a = 1  # noqa: ZG201, ZG999\n"
    kept = apply_noqa("m.py", src, [], KNOWN, lambda c: True)
    assert sorted((f.code, f.message) for f in kept) == [
        ("ZG902", "unused `noqa` directive for `ZG201`"),
        ("ZG903", "`# noqa` names `ZG999`, which is not a zgen rule"),
    ]


def test_unused_not_reported_for_disabled_rule():
    src = "a = 1  # noqa: ZG201\n"
    assert apply_noqa("m.py", src, [], KNOWN, lambda c: c != "ZG201") == []


def test_noqa_inside_a_string_is_not_a_directive():
    src = 's = "# noqa: ZG101"\n'
    assert parse_directives(src) == []


def test_untokenizable_file_still_honours_comments():
    src = "def f(:\n    x = 1  # noqa: ZG101\n"
    assert [d.codes for d in parse_directives(src)] == [("ZG101",)]


def test_other_tools_directives_are_not_tokenized(monkeypatch):
    """Only a text naming a zgen code in a `noqa` comment is tokenized; the directives found are the same."""
    import tokenize

    src = "import os  # noqa: F401\nx = '# noqa: ZG'  # NOQA: E501\n"
    real = tokenize.generate_tokens

    def refuse(*args):
        raise AssertionError("tokenized a text without a zgen code in a noqa comment")

    monkeypatch.setattr(tokenize, "generate_tokens", refuse)
    assert parse_directives(src) == []
    monkeypatch.setattr(tokenize, "generate_tokens", real)
    src += "y = 1  # noqa: E501,\n#   zg101\nz = '# noqa: ZG201'\nw = 2  # noqa: zg101\n"
    assert [(d.line, d.codes) for d in parse_directives(src)] == [(6, ("ZG101",))]
