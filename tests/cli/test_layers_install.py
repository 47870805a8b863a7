"""The install layers: `zgen check` needs no torch, and plan/emit say so in one line when it is missing."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

from zgen.cli import main

REPO = Path(__file__).resolve().parents[2]

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - 3.10
    import tomli as tomllib


def _project() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!;\[ ]", r, maxsplit=1)[0].lower() for r in requirements}


def test_the_base_install_is_the_check_layer_alone():
    base = _names(_project()["dependencies"])
    assert {"libcst", "z3-solver", "jinja2"} <= base
    assert "torch" not in base and "numpy" not in base, "the pre-commit hook would pull a multi-GB torch"


def test_the_train_extra_brings_torch_and_numpy():
    train = _names(_project()["optional-dependencies"]["train"])
    assert {"torch", "numpy"} <= train  # numpy: torch.distributed.checkpoint saves through it


def test_every_package_ships():
    # A package missing from pyproject's list is left out of a wheel: the emitted script would not import.
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "zgen").rglob("__init__.py")}
    assert found - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"


def test_plan_without_torch_stops_with_one_line(capsys, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    code = main(["plan", "--model", "examples/llama/model.py:build_tiny_model"])
    err = capsys.readouterr().err
    assert code == 2
    assert "needs torch" in err and "zgen[train]" in err
    assert "Traceback" not in err
