import pytest

from zgen.errors import ZgenError
from zgen.selection import Selection, validate_selectors


def test_more_specific_selector_wins():
    s = Selection(select=("ZG", "ZG201"), ignore=("ZG2",))
    assert s.enabled("ZG101")
    assert not s.enabled("ZG202")
    assert s.enabled("ZG201")
    assert not s.enabled("ZC101")


def test_equal_specificity_ignore_wins():
    assert not Selection(select=("ZG1",), ignore=("ZG1",)).enabled("ZG101")


def test_all_selects_everything():
    assert Selection(select=("ALL",), ignore=()).enabled("ZC301")


def test_per_file_ignores_by_glob():
    s = Selection(select=("ZG",), ignore=(), per_file_ignores=(("tests/**", ("ZG1",)), ("legacy.py", ("ZG201",))))
    assert not s.enabled_for("tests/unit/test_x.py", "ZG101")
    assert s.enabled_for("src/x.py", "ZG101")
    assert not s.enabled_for("pkg/legacy.py", "ZG201")


def test_unknown_selector_is_an_error_with_suggestion():
    with pytest.raises(ZgenError, match=r"`ZG21` matches no zgen rule"):
        validate_selectors(["ZG21"], {"ZG201", "ZG101"}, "pyproject.toml")
    with pytest.raises(ZgenError, match="did you mean `ZG201`"):
        validate_selectors(["ZG2O1"], {"ZG201", "ZG101"}, "pyproject.toml")
