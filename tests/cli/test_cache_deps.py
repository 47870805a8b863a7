"""The findings cache notices when a file the check read (an imported base class) changed."""

from __future__ import annotations

import textwrap

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
