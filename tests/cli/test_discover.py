import os

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


def test_named_directory_is_checked_inside_an_excluded_name(tmp_path):
    pkg = tmp_path / "venv" / "lib" / "site-packages" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "model.py").write_text("x = 1\n")
    (pkg / "venv").mkdir()  # an excluded name below the named directory is still skipped
    (pkg / "venv" / "skip.py").write_text("x = 1\n")
    got = discover(["venv/lib/site-packages/pkg"], DEFAULT_EXCLUDE, cwd=tmp_path)
    assert got.sources == ("venv/lib/site-packages/pkg/model.py",)
    # Naming `venv` checks it, but excludes below it (`site-packages`) still apply.
    (tmp_path / "venv" / "tool.py").write_text("x = 1\n")
    assert discover(["venv"], DEFAULT_EXCLUDE, cwd=tmp_path).sources == ("venv/tool.py",)
    # The project walk still leaves the virtual environment out.
    assert discover(["."], DEFAULT_EXCLUDE, cwd=tmp_path).sources == ()


def test_force_exclude_says_how_many_files_it_skipped(tmp_path):
    (tmp_path / "venv").mkdir()
    for name in ("a.py", "b.py", "notes.txt"):
        (tmp_path / "venv" / name).write_text("")
    got = discover(["venv"], DEFAULT_EXCLUDE, force_exclude=True, cwd=tmp_path)
    assert got.sources == ()
    assert got.notes == ("venv: excluded (--force-exclude), skipped 2 files",)


def test_configured_exclude_says_how_many_files_a_walk_skipped(tmp_path):
    for folder in ("src", "generated", "venv"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "model.py").write_text("")
    (tmp_path / "generated" / "more.py").write_text("")
    got = discover(["."], (*DEFAULT_EXCLUDE, "generated"), cwd=tmp_path, explicit=("generated",))
    assert got.sources == ("src/model.py",)
    # The user's own exclude is reported; the default `venv` stays quiet.
    assert got.notes == ("generated: excluded by the configured `exclude`, skipped 2 files",)


def test_unreadable_directory_is_a_note(tmp_path, monkeypatch):
    (tmp_path / "ok").mkdir()
    (tmp_path / "ok" / "a.py").write_text("")
    (tmp_path / "locked").mkdir()
    real = os.scandir

    def scandir(path="."):
        if os.fspath(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    got = discover(["."], DEFAULT_EXCLUDE, cwd=tmp_path)
    assert got.sources == ("ok/a.py",)
    assert got.notes == ("locked: cannot read directory: Permission denied; its files are not checked",)
