"""Dataclass methods compiled from kept code are the methods a fresh compile makes."""

from __future__ import annotations

import dataclasses
import marshal
import re
import subprocess
import sys
import typing

import zgen.kept_code as kept_code
from zgen.kept_code import kept_dataclass_code, kept_patterns


def _make() -> type:
    @dataclasses.dataclass(frozen=True, order=True)
    class Point:
        x: int
        y: typing.Optional[str] = None
        tags: tuple[str, ...] = dataclasses.field(default=())

    return Point


def _compiles(monkeypatch) -> list[str]:
    seen: list[str] = []

    def counting(source, *args, **kwargs):
        seen.append(source)
        return compile(source, *args, **kwargs)

    monkeypatch.setattr(kept_code, "compile", counting, raising=False)
    return seen


def test_second_run_compiles_nothing_and_makes_the_same_class(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    compiled = _compiles(monkeypatch)
    with kept_dataclass_code("t", tmp_path):
        first = _make()
    assert compiled, "the first run compiles the generated methods"
    assert list(tmp_path.iterdir()), "and keeps them"
    compiled.clear()
    with kept_dataclass_code("t", tmp_path):
        second = _make()
    assert compiled == []
    plain = _make()
    for cls in (first, second):
        p = cls(1, "a", ("t",))
        assert (p.x, p.y, p.tags) == (1, "a", ("t",))
        assert repr(p).endswith("Point(x=1, y='a', tags=('t',))")
        assert p == cls(1, "a", ("t",)) and p < cls(2) and hash(p) == hash(cls(1, "a", ("t",)))
        # the annotations are types, as in a plain dataclass (no future flag of the module compiling them)
        assert cls.__init__.__annotations__ == plain.__init__.__annotations__
        assert cls.__init__.__code__.co_filename == plain.__init__.__code__.co_filename
        try:
            p.x = 3
        except dataclasses.FrozenInstanceError:
            pass
        else:
            raise AssertionError("frozen")
    assert "exec" not in vars(dataclasses), "the hook is removed"


def test_unreadable_kept_file_compiles_again(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    with kept_dataclass_code("t", tmp_path):
        _make()
    (kept,) = tmp_path.iterdir()
    kept.write_bytes(kept.read_bytes()[:40])  # a truncated file
    compiled = _compiles(monkeypatch)
    with kept_dataclass_code("t", tmp_path):
        cls = _make()
    assert compiled and cls(1).x == 1
    kept.write_bytes(b"not marshal at all")
    compiled.clear()
    with kept_dataclass_code("t", tmp_path):
        cls = _make()
    assert compiled and cls(2).x == 2


def test_nothing_written_without_bytecode(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    with kept_dataclass_code("t", tmp_path):
        assert _make()(1).x == 1
    assert list(tmp_path.iterdir()) == []


def test_libcst_loads_through_kept_code(tmp_path):
    """A fresh interpreter loads libcst through the model checker's lazy import, and parses with it."""
    code = (
        "from zgen.model.program.tree import cst, load_libcst\n"
        "load_libcst()\n"
        "import dataclasses\n"
        "assert 'exec' not in vars(dataclasses)\n"
        "print(cst.parse_module('x = 1\\n').code, end='')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "x = 1\n"


# -- regular expressions ------------------------------------------------------------------------------------------

_PATTERNS = [
    (r"(?P<word>\b(?:clip_grad_norm_|deepcopy|state_dict)\b)\s*\(", 0),
    (r"^\s*#\s*noqa(?::\s*(?P<codes>[A-Z]+\d+(?:[,\s]+[A-Z]+\d+)*))?", re.IGNORECASE | re.MULTILINE),
    (r"(a|b)*?c{2,5}[^\d\s]+", 0),
]
_TEXTS = ["x = deepcopy(model)", "  # NOQA: ZG101, ZG102", "ababccc!!", "nothing", "state_dict ( )"]


def _uncached(pattern: str, flags: int) -> re.Pattern[str]:
    re.purge()  # `re`'s own cache would answer before the compiler is asked
    return re.compile(pattern, flags)


def _behaviour(compiled: re.Pattern[str]) -> list:
    return [compiled.flags, compiled.groups, dict(compiled.groupindex),
            *[(m.span(), m.groups()) if (m := compiled.search(t)) else None for t in _TEXTS]]


def test_kept_patterns_match_as_fresh_ones_without_parsing_again(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    with kept_patterns("t", tmp_path):
        first = [_behaviour(_uncached(p, f)) for p, f in _PATTERNS]
    assert list(tmp_path.iterdir()), "the programs are kept"

    def no_parse(*args, **kwargs):
        raise AssertionError("parsed again")

    monkeypatch.setattr(re._parser, "parse", no_parse)
    with kept_patterns("t", tmp_path):
        second = [_behaviour(_uncached(p, f)) for p, f in _PATTERNS]
    monkeypatch.undo()
    plain = [_behaviour(_uncached(p, f)) for p, f in _PATTERNS]
    assert first == second == plain
    assert all(m is not None for m in plain[0][3:4]), "the texts exercise the patterns"


def test_damaged_kept_patterns_compile_again(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    with kept_patterns("t", tmp_path):
        _uncached(*_PATTERNS[0])
    (kept,) = tmp_path.iterdir()
    kept.write_bytes(kept.read_bytes()[:30])
    with kept_patterns("t", tmp_path):
        assert _uncached(*_PATTERNS[0]).search(_TEXTS[0]).group("word") == "deepcopy"
    # an entry whose program `_sre` refuses is compiled from the text again
    header = kept_code._pattern_header()
    key = (_PATTERNS[0][0], 0)
    kept.write_bytes(header + marshal.dumps({key: (key[0], 0, [1, 2, 3], 0, {}, (None,))}))
    with kept_patterns("t", tmp_path):
        assert _uncached(*_PATTERNS[0]).search(_TEXTS[0]).group("word") == "deepcopy"
    re.purge()


def test_patterns_of_one_run_only_are_kept(tmp_path, monkeypatch):
    """Patterns built from one file's names are not carried from run to run: the file holds the last run's."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    with kept_patterns("t", tmp_path):
        _uncached(r"self\.(?:ema|online)\b", 0)
    with kept_patterns("t", tmp_path):
        _uncached(r"self\.(?:target|policy)\b", 0)
    (kept,) = tmp_path.iterdir()
    keys = {k for k, _ in kept_code._read(kept, kept_code._pattern_header()).items()}
    assert keys == {(r"self\.(?:target|policy)\b", 0)}
    assert re._compiler.compile.__module__ == "re._compiler", "the hook is removed"
    re.purge()
