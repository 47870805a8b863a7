"""A file or directory zgen cannot read is reported and the run goes on; an unreadable file exits 2."""

from __future__ import annotations

import os

BAD = """
import torch.distributed as dist
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.Linear(4, 4)

    def forward(self, x):
        if dist.get_rank() == 0:
            x = self.block(x)
        return x
"""


def test_unreadable_file_is_a_finding_and_the_others_are_checked(zgen, tmp_path):
    (tmp_path / "model.py").write_text(BAD)
    os.symlink(tmp_path / "gone.py", tmp_path / "broken.py")  # listed by the walk, fails to open
    code, out, err = zgen("check", ".", "--output-format", "concise", "--no-cache", cwd=tmp_path)
    assert code == 2, err
    assert "broken.py:1:1: ZG901 file cannot be read: No such file or directory" in out
    assert "model.py:" in out and " ZG201 " in out


def test_unreadable_directory_is_a_warning(zgen, tmp_path, monkeypatch):
    (tmp_path / "model.py").write_text("x = 1\n")
    (tmp_path / "locked").mkdir()
    real = os.scandir

    def scandir(path="."):
        if os.fspath(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    code, out, err = zgen("check", ".", "--no-cache", cwd=tmp_path)
    assert code == 0
    assert "warning: locked: cannot read directory: Permission denied" in err


def test_force_excluded_tree_reports_what_it_skipped(zgen, tmp_path):
    (tmp_path / "venv").mkdir()
    (tmp_path / "venv" / "m.py").write_text(BAD)
    code, out, err = zgen("check", "venv", "--force-exclude", "--no-cache", cwd=tmp_path)
    assert code == 0 and "warning: venv: excluded (--force-exclude), skipped 1 file" in err
    code, out, err = zgen("check", "venv", "--output-format", "concise", "--no-cache", cwd=tmp_path)
    assert code == 1 and "venv/m.py:" in out
