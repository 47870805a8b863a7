import pytest

from zgen.discover import discover
from zgen.errors import ZgenError
from zgen.settings import DEFAULT_EXCLUDE


def test_walks_directories_and_sniffs_configs(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "model.py").write_text("x = 1\n")
    (tmp_path / "pkg" / "ds.json").write_text('{"zero_optimization": {"stage": 3}}')
    (tmp_path / "pkg" / "package.json").write_text('{"name": "web"}')
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "lib.py").write_text("x = 1\n")
    got = discover(["."], DEFAULT_EXCLUDE, cwd=tmp_path)
    assert got.sources == ("pkg/model.py",)
    assert got.configs == ("pkg/ds.json",)


def test_explicit_files_are_always_checked(tmp_path):
    (tmp_path / "cfg.json").write_text("{}")
    assert discover(["cfg.json"], DEFAULT_EXCLUDE, cwd=tmp_path).configs == ("cfg.json",)


def test_extend_exclude_glob(tmp_path):
    (tmp_path / "gen").mkdir()
    (tmp_path / "gen" / "a.py").write_text("")
    (tmp_path / "b.py").write_text("")
    assert discover(["."], DEFAULT_EXCLUDE + ("gen",), cwd=tmp_path).sources == ("b.py",)


def test_missing_path_is_an_error(tmp_path):
    with pytest.raises(ZgenError, match="nope.py: no such file or directory"):
        discover(["nope.py"], DEFAULT_EXCLUDE, cwd=tmp_path)


def test_unsupported_extension_is_an_error(tmp_path):
    (tmp_path / "notes.txt").write_text("")
    with pytest.raises(ZgenError, match="not `.txt`"):
        discover(["notes.txt"], DEFAULT_EXCLUDE, cwd=tmp_path)
