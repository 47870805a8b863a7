"""Small packages of model sources, written under a test's `tmp_path` and checked: for tests of what zgen reads
across the files of a package.

    path = write_package(tmp_path, {"nets.py": NETS, "model.py": MODEL}) / "model.py"
    assert ("ZG303", 12) in found(path, "ZG3")
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from zgen.model import check_source

__all__ = ["Q_NETS", "TINY_NET", "WIDE_NET", "write_package", "found", "found_in_package", "found_in_directory"]

# `nets.py` of a small RL package: a Q network of two layers above the persistence threshold, for the trainers,
# agents and ensembles the tests hold it in.
Q_NETS = """
import torch
from torch import nn


class QNet(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        self.l1 = nn.Linear(d, 512)
        self.out = nn.Linear(512, n)

    def forward(self, x):
        return self.out(torch.relu(self.l1(x)))
"""


# A module of one small layer (`class Net`, beside `from torch import nn` in the source): the built model that script
# and trainer tests hand around, spliced into a test's source where its lines stand.
TINY_NET = """class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)
"""
# ... and one whose layer passes the persistence threshold (512 x 512 elements): its forward gathers.
WIDE_NET = TINY_NET.replace("nn.Linear(4, 4)", "nn.Linear(512, 512)")


def write_package(root: Path, files: dict[str, str], name: str = "pkg", init: str = "") -> Path:
    """The package `root/name` (made if missing) with `__init__.py` holding `init` and each of `files` (name:
    source, dedented; a name with `/` lands in a subpackage, whose `__init__.py` is made empty). Returns its
    directory; writing again into it replaces the files named."""
    package = root / name
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text(init)
    for relative, source in files.items():
        path = package / relative
        for directory in reversed(path.relative_to(package).parents[:-1]):
            (package / directory).mkdir(exist_ok=True)
            marker = package / directory / "__init__.py"
            if not marker.exists():
                marker.write_text("")
        path.write_text(textwrap.dedent(source))
    return package


def found(path: Path, prefix: str = "") -> list[tuple[str, int]]:
    """(code, line) of the findings in the file at `path` whose code starts with `prefix`, in report order."""
    return [(f.code, f.line) for f in check_source(str(path), path.read_text()) if f.code.startswith(prefix)]


def found_in_package(root: Path, files: dict[str, str], checked: str, *, name: str = "pkg",
                     prefix: str = "") -> list[tuple[str, int]]:
    """`found` for the file `checked` of the package `write_package(root, files, name)`."""
    return found(write_package(root, files, name) / checked, prefix)


def found_in_directory(root: Path, files: dict[str, str], checked: str, prefix: str = "") -> list[tuple[str, int]]:
    """`found` for the file `checked` of a plain directory of scripts written under `root` (no `__init__.py`: its
    files import each other by bare names, `from models import *`), each of `files` dedented."""
    for name, source in files.items():
        (root / name).write_text(textwrap.dedent(source))
    return found(root / checked, prefix)
