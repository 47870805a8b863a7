"""A script that puts its project's top on `sys.path`, and one of single-line statements, hand built models on.

`examples/train.py` runs `sys.path.append(os.path.join(os.path.dirname(__file__), ".."))` and then imports
`core.utils` from a folder with no `__init__.py` at the project's top: the helper is read, so handing it a model the
script built (`n = tally(model)`, which sizes every parameter) is found at the call (ZG102). The same holds
for a script whose module-level code is all one-line statements, importing a helper beside it. Without the path
addition, nothing tells where `core` is, and nothing is reported.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.model.package_check import TINY_NET, found

HELPER = """
def tally(model):
    return sum(p.numel() for p in model.parameters())
"""

SCRIPT = """
import os
import sys

import torch.nn as nn

sys.path.append(os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))

from core.utils import tally


""" + TINY_NET + """

model = Net()
n = tally(model)
"""


def _project(root: Path, script: str) -> Path:
    (root / "core").mkdir()
    (root / "core" / "utils.py").write_text(textwrap.dedent(HELPER))
    (root / "examples").mkdir()
    path = root / "examples" / "train.py"
    path.write_text(textwrap.dedent(script))
    return path


def test_a_helper_on_the_path_the_script_adds_is_read(tmp_path):
    assert found(_project(tmp_path, SCRIPT), "ZG1") == [("ZG102", 22)]


def test_without_the_path_addition_the_helper_is_not_found(tmp_path):
    script = SCRIPT.replace('sys.path.append(os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))', "")
    assert found(_project(tmp_path, script), "ZG1") == []


def test_a_script_of_one_line_statements_hands_its_model_to_a_helper_beside_it(tmp_path):
    (tmp_path / "helpers.py").write_text(textwrap.dedent(HELPER))
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(SCRIPT).replace("from core.utils import", "from helpers import"))
    assert found(script, "ZG1") == [("ZG102", 22)]
