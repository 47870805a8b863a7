"""Classes of a library installed in the checked code's own environment (issue 20, h-qzg3): zgen may run from
another interpreter (pre-commit, pipx), so a `.venv` with a `pyvenv.cfg` in the checked project, or the active
virtual environment, is searched for the library's files, read and never imported. A library found nowhere stays
unknown: nothing is guessed about its classes."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from zgen.model import check_source

LIBRARY = """
import torch
from torch import nn

class TextTower(nn.Module):
    def __init__(self, vocab, d):
        super().__init__()
        self.table = nn.Parameter(torch.empty(vocab, d))
        self.proj = nn.Linear(d, d)

    def forward(self, ids):
        return self.proj(self.table[ids])

    def encode_text(self, ids):
        return self.table[ids] @ self.proj.weight.T
"""

ADAPTER = """
from LIBNAME import TextTower

class Adapter:
    def __init__(self):
        self.tower = TextTower(32000, 512)

    def embed(self, ids):
        return self.tower.encode_text(ids)
"""


def _project(tmp_path: Path, venv: bool) -> Path:
    root = tmp_path / ("with_venv" if venv else "without_venv")
    pkg = root / "app"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    # one library name per case: the process's project keeps every environment it was shown
    library = "qzg3_envlib_found" if venv else "qzg3_envlib_unfound"
    (pkg / "adapter.py").write_text(textwrap.dedent(ADAPTER.replace("LIBNAME", library)))
    site = root / ".venv" / "lib" / "python3.11" / "site-packages" / library
    site.mkdir(parents=True)
    (site / "__init__.py").write_text(textwrap.dedent(LIBRARY))
    if venv:
        (root / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    return pkg / "adapter.py"


def _found(path: Path) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source(str(path), path.read_text()) if f.code.startswith("ZG3")]


def test_a_class_of_a_library_in_the_projects_virtual_environment_is_read(tmp_path):
    # the adapter's method runs the tower's encode_text, which reads the tower's own 32000 x 512 table
    assert _found(_project(tmp_path, venv=True)) == [("ZG303", 9)]


def test_a_library_in_no_environment_stays_unknown(tmp_path):
    # the same files, but `.venv` is no virtual environment (no pyvenv.cfg): the class is not read, nothing guessed
    assert _found(_project(tmp_path, venv=False)) == []


OPEN_CLIP = Path("/work/corpus-src/open_clip_torch-2.30.0/open_clip")

CLIP_ADAPTER = """
import open_clip

class ClipAdapter:
    def __init__(self, name, pretrained):
        clip, _, preprocess = open_clip.create_model_and_transforms(name, pretrained=pretrained)
        self.clip = clip

    def embed_texts(self, ids):
        return self.clip.encode_text(ids)
"""


@pytest.mark.skipif(not OPEN_CLIP.is_dir(), reason="open_clip's release is not unpacked here")
def test_open_clips_clip_located_in_the_environment_reads_its_own_projection(tmp_path):
    site = tmp_path / "proj" / ".venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (tmp_path / "proj" / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    os.symlink(OPEN_CLIP, site / "open_clip")
    pkg = tmp_path / "proj" / "app"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    path = pkg / "clip_adapter.py"
    path.write_text(textwrap.dedent(CLIP_ADAPTER))
    # CLIP.encode_text reads CLIP's own positional embedding and text projection; no hook of CLIP runs
    assert _found(path) == [("ZG303", 10)]
