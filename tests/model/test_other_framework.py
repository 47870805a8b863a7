"""A file of TensorFlow, Keras, JAX or Flax code that does not import torch holds no PyTorch model: the model rules
are not run on it (`ModelIndex.other_framework`; transformers ships such a twin of most of its model files, a
quarter of the time of a check of all of them). The same code importing torch is checked as usual."""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

# A layer skipped on a random draw: ZG202 under torch.
BODY = textwrap.dedent(
    """
    class Net(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(512, 512) for _ in range(n)])

        def forward(self, x):
            for layer in self.layers:
                if random.random() < 0.1:
                    continue
                x = layer(x)
            return x
    """
)


def codes(head: str) -> list[str]:
    return [f.code for f in check_source("m.py", textwrap.dedent(head) + BODY)]


def test_torch_file_is_checked():
    assert codes("import random\nimport torch\nfrom torch import nn\n") == ["ZG202"]


@pytest.mark.parametrize(
    "head",
    [
        "import random\nimport jax\nimport flax.linen as nn\n",
        "import random\nimport tensorflow as tf\nfrom tensorflow.keras import layers as nn\n",
    ],
)
def test_other_framework_file_has_no_findings(head):
    assert codes(head) == []


def test_file_importing_torch_beside_jax_is_checked():
    assert codes("import random\nimport jax\nimport torch\nfrom torch import nn\n") == ["ZG202"]
