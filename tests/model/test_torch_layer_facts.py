"""Facts of torch's own layer classes.

* `nn.TransformerEncoder(layer, n)` / `nn.TransformerDecoder(layer, n)` deep-copy the layer they are handed once
  per layer of the stack (`_get_clones`): in `__init__`, after the layer was built (and, under `zero.Init`,
  partitioned), every copy is made of placeholders (ZG105). A class of the file of the same name that keeps the
  layer it is handed makes no copy.
* `NonDynamicallyQuantizableLinear` (MultiheadAttention's `out_proj`) is a `Linear`: its weight handed to
  `F.linear` by the module holding it, which never calls it, is read outside its hooks (ZG301).
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source


def _found(source: str, prefix: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("model.py", textwrap.dedent(source)) if f.code.startswith(prefix)]


STACKS = """
from torch import nn


class Encoder(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model=d, nhead=4)
        self.layers = nn.TransformerEncoder(encoder_layer=layer, num_layers=n)

    def forward(self, x):
        return self.layers(x)


class TransformerEncoder(nn.Module):
    def __init__(self, layer, n):
        super().__init__()
        self.layer = layer
        self.n = n

    def forward(self, x):
        for _ in range(self.n):
            x = self.layer(x)
        return x


class Shared(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        layer = nn.Linear(d, d)
        self.stack = TransformerEncoder(layer, n)

    def forward(self, x):
        return self.stack(x)
"""


def test_a_torch_transformer_stack_copies_the_built_layer_but_a_class_of_the_file_keeps_it() -> None:
    assert _found(STACKS, "ZG105") == [("ZG105", 9)]


OUT_PROJ = """
import torch.nn.functional as F
from torch import nn
from torch.nn.modules.linear import NonDynamicallyQuantizableLinear


class Attention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.out_proj = NonDynamicallyQuantizableLinear(d, d)
        self.gate = NonDynamicallyQuantizableLinear(d, d)

    def forward(self, x):
        return F.linear(x, self.out_proj.weight, self.out_proj.bias) * self.gate(x)
"""


def test_the_out_projection_class_of_multihead_attention_owns_a_weight() -> None:
    assert _found(OUT_PROJ, "ZG3") == [("ZG301", 14), ("ZG301", 14)]
