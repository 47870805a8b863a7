"""The findings cache notices when a file the check read (an imported base class) changed, or zgen itself."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

LAYERS = """
from torch import nn

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
"""

MODEL = """
import torch.distributed as dist
from torch import nn
from .layers import Block

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x):
        if dist.get_rank() == 0:
            x = self.block(x)
        return x
"""


def test_changed_dependency_invalidates_the_entry(zgen, tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "layers.py").write_text(textwrap.dedent(LAYERS))
    (pkg / "model.py").write_text(textwrap.dedent(MODEL))
    code, out, _ = zgen("check", "pkg/model.py", "--output-format", "concise", cwd=tmp_path)
    assert code == 1 and " ZG201 " in out
    assert zgen("check", "pkg/model.py", "--output-format", "concise", cwd=tmp_path)[1] == out  # from the cache
    # Block loses its parameters: calling it under a rank gate gathers nothing any more.
    (pkg / "layers.py").write_text(textwrap.dedent(LAYERS).replace("nn.Linear(4, 4)", "nn.ReLU()"))
    code, out, _ = zgen("check", "pkg/model.py", "--output-format", "concise", cwd=tmp_path)
    assert code == 0, out


def test_a_library_installed_after_a_check_is_seen(tmp_path):
    # The base class lives in a package that is not on the import path at first: the module is unknown.
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "model.py").write_text(textwrap.dedent(MODEL).replace("from .layers import", "from extlib import"))
    site = tmp_path / "site"
    site.mkdir()
    (site / "extlib.py").write_text(textwrap.dedent(LAYERS))

    def check(pythonpath: str) -> subprocess.CompletedProcess:
        env = {**os.environ, "PYTHONPATH": pythonpath}
        return subprocess.run([sys.executable, "-m", "zgen", "check", "proj/model.py", "--output-format", "concise"],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)

    assert check("").returncode == 0
    # "Installing" it puts it on the import path; the cached result of the unchanged file must not be reused.
    done = check(str(site))
    assert done.returncode == 1 and " ZG201 " in done.stdout, done.stdout + done.stderr


VQ = """
from torch import nn

class VQ(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        return self.proj(x)

    def decode(self, h):
        return h @ self.proj.weight.T
"""

SCORE = """
def score(model, x):
    return model.decode(x)
"""

PLAIN_DECODER = """
from torch import nn

class Identity(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)

    def decode(self, h):
        return h
"""


@pytest.mark.parametrize("change", ["a new file", "an edited file"])
def test_a_new_definer_in_the_package_is_seen(zgen, tmp_path, change):
    # `score` is handed a model of some class of the package that defines `decode`: the answer depends on which
    # files the package holds, not only on the files the check read.
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "vq.py").write_text(textwrap.dedent(VQ))
    (pkg / "score.py").write_text(textwrap.dedent(SCORE))
    code, out, _ = zgen("check", "pkg/score.py", "--output-format", "concise", cwd=tmp_path)
    assert code == 1 and " ZG303 " in out, out
    assert zgen("check", "pkg/score.py", "--output-format", "concise", cwd=tmp_path)[1] == out  # from the cache
    # A module class whose `decode` computes with none of its parameters: the model may be one of those.
    if change == "a new file":
        (pkg / "identity.py").write_text(textwrap.dedent(PLAIN_DECODER))
    else:
        (pkg / "__init__.py").write_text(textwrap.dedent(PLAIN_DECODER))
    code, out, _ = zgen("check", "pkg/score.py", "--output-format", "concise", cwd=tmp_path)
    assert code == 0, out


def test_an_upgraded_zgen_does_not_reuse_the_old_findings(tmp_path):
    # The version string stays while the checker changes (a `git pull` of an editable install, a pre-commit hook at a
    # new rev sharing the project's `.zgen_cache/`): an unchanged file must be checked again by the new code.
    import zgen

    installed = tmp_path / "site"
    shutil.copytree(Path(zgen.__file__).parent, installed / "zgen", ignore=shutil.ignore_patterns("__pycache__"))
    proj = tmp_path / "proj"
    (proj / "pkg").mkdir(parents=True)
    (proj / "pkg" / "__init__.py").write_text("")
    (proj / "pkg" / "layers.py").write_text(textwrap.dedent(LAYERS))
    (proj / "pkg" / "model.py").write_text(textwrap.dedent(MODEL))

    def check() -> str:
        env = {**os.environ, "PYTHONPATH": str(installed)}
        done = subprocess.run([sys.executable, "-m", "zgen", "check", "pkg/model.py", "--output-format", "concise"],
                              cwd=proj, env=env, capture_output=True, text=True, timeout=120)
        return done.stdout + done.stderr

    assert "hang in its parameter all-gather" in check()
    rule = installed / "zgen" / "model" / "analysis" / "divergence.py"
    rule.write_text(rule.read_text().replace("skip the call hang in its", "skip the call wait in its"))
    out = check()
    assert "wait in its parameter all-gather" in out and "hang in" not in out, out
