"""A callable kept on `self` and named for initialising (`self.embedding_initializer = get_initializer(spec)`) writes
the parameter it is handed: called, in a helper `__init__` runs, on the weight of a child built before, it writes a
partitioned placeholder (ZG103). Handed a tensor before it becomes a parameter, it writes nothing partitioned.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

EMBEDDINGS = """
import torch
from torch import nn
from mylib import get_initializer


class FeatureEmbedding(nn.Module):
    def __init__(self, features, dim, embedding_initializer="partial(nn.init.normal_, std=1e-4)"):
        super().__init__()
        self.embedding_initializer = get_initializer(embedding_initializer)
        self.embedding_layers = nn.ModuleDict()
        for name, vocab in features.items():
            self.embedding_layers[name] = nn.Embedding(vocab, dim)
        self.init_weights()

    def init_weights(self):
        for name, layer in self.embedding_layers.items():
            self.embedding_initializer(layer.weight)

    def forward(self, x):
        return {k: self.embedding_layers[k](v) for k, v in x.items()}
"""

LOOK_ALIKE = """
import torch
from torch import nn
from mylib import get_initializer


class Table(nn.Module):
    def __init__(self, vocab, dim, embedding_initializer="normal"):
        super().__init__()
        self.embedding_initializer = get_initializer(embedding_initializer)
        table = torch.empty(vocab, dim)
        self.embedding_initializer(table)
        self.table = nn.Parameter(table)

    def forward(self, ids):
        return self.table[ids]
"""


def _found(source: str) -> list[tuple[str, int]]:
    found = check_source("model.py", textwrap.dedent(source))
    return sorted((f.code, f.line) for f in found if f.code.startswith("ZG1"))


def test_an_initialiser_callable_kept_on_self_writes_a_built_childs_weight():
    assert _found(EMBEDDINGS) == [("ZG103", 18)]


def test_the_same_callable_on_a_tensor_not_yet_a_parameter_writes_nothing_partitioned():
    assert _found(LOOK_ALIKE) == []
