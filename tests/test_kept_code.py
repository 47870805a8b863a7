"""Dataclass methods compiled from kept code are the methods a fresh compile makes."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import typing

import zgen.kept_code as kept_code
from zgen.kept_code import kept_dataclass_code


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
