"""Files saved with Windows line endings (`\\r\\n`) or old Mac ones (`\\r`) are read as the same file saved with `\\n`:
the same findings at the same lines. The checker's text patterns read `\\n` as a line's end, so a file it read with
`\\r\\n` left in lost the facts those patterns find (a loader's batches, the tests a rule starts from)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.model.package_check import found_in_package
from zgen.model import check_source

SOURCE = textwrap.dedent(
    """
    import torch
    from torch import nn


    class MLP(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.model = nn.Linear(d, 1)
            self.head = nn.Linear(d, d)

        def forward(self, X, context=None):
            h = self.model(X)
            if context is not None:
                h = h + self.head(context)
            return h

        def train_epoch(self, loader):
            for batch_ndx, sample in enumerate(loader):
                X_next, y_next = sample
                if len(X_next) < 2:
                    continue
                preds = self.forward(X_next).squeeze()
            return preds
    """
)


def _found(source: str) -> list[tuple[str, int, int]]:
    return [(f.code, f.line, f.column) for f in check_source("model.py", source)]


def test_windows_and_old_mac_line_endings_give_the_findings_of_the_same_file_with_newlines() -> None:
    expected = _found(SOURCE)
    assert ("ZG203", 21, 16) in expected and any(code == "ZG205" for code, _, _ in expected)
    assert _found(SOURCE.replace("\n", "\r\n")) == expected
    assert _found(SOURCE.replace("\n", "\r")) == expected


BASE = """
from torch import nn


class Base(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.backbone = nn.Linear(d, d)

    def forward(self, x):
        return self.backbone(x)
"""

CHILD = """
import copy

from .base import Base


class Child(Base):
    def __init__(self, d):
        super().__init__(d)
        self.target = copy.deepcopy(self.backbone)
"""


def test_a_base_class_in_a_file_saved_with_windows_line_endings_is_read(tmp_path: Path) -> None:
    files = {"base.py": BASE.replace("\n", "\r\n"), "child.py": CHILD}
    assert found_in_package(tmp_path, files, "child.py", prefix="ZG1") == [("ZG105", 10)]
