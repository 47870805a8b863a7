"""Static parameter counts from literal shapes (`zgen.model.model_shape`)."""

from __future__ import annotations

import textwrap

from zgen.model import model_shape


def test_llama_example_matches_its_own_count(repo):
    path = repo / "examples" / "llama" / "model.py"
    shape = model_shape("examples/llama/model.py", path.read_text())
    assert shape is not None
    assert shape.params == 1_235_814_400  # examples/llama/model.py param_count(), tied head counted once
    assert (shape.layers, shape.hidden, shape.heads, shape.kv_heads, shape.ffn, shape.vocab) == (
        16,
        2048,
        32,
        8,
        8192,
        128256,
    )
    assert shape.largest_layer_params == 60_821_504
    assert shape.source.startswith("examples/llama/model.py:")


def test_untied_head_is_counted_and_buffers_are_not(repo):
    source = (repo / "examples" / "llama" / "model.py").read_text()
    untied = source.replace("tie_word_embeddings: bool = True", "tie_word_embeddings: bool = False")
    shape = model_shape("model.py", untied)
    assert shape is not None and shape.params == 1_235_814_400 + 128256 * 2048


_GPT = """
from dataclasses import dataclass
import torch
from torch import nn

@dataclass
class GPTConfig:
    vocab_size: int = 100
    n_embd: int = 8
    n_layer: int = 3

class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln = nn.LayerNorm(config.n_embd)
        self.fc = nn.Linear(config.n_embd, 4 * config.n_embd)
        self.register_buffer("mask", torch.ones(16, 16))

class GPT(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.h = nn.ModuleList([Block(config) for _ in range(config.n_layer)])
        self.scale = nn.Parameter(torch.ones(config.n_embd))
"""


def test_small_model_counts_every_kind_of_parameter():
    shape = model_shape("gpt.py", textwrap.dedent(_GPT))
    per_block = 2 * 8 + (8 * 32 + 32)
    assert shape is not None
    assert shape.params == 100 * 8 + 3 * per_block + 8
    assert (shape.layers, shape.hidden, shape.vocab, shape.largest_layer_params) == (3, 8, 100, per_block)


_IMPORTED_CONFIG = """
from transformers import LlamaConfig
from torch import nn

class M(nn.Module):
    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.fc = nn.Linear(config.hidden_size, 4)
"""


def test_unsure_gives_none():
    # Sizes that depend on a runtime value, an imported config, or a file that does not parse.
    runtime = _GPT.replace("nn.Parameter(torch.ones(config.n_embd))", "nn.Parameter(load())")
    assert model_shape("a.py", runtime) is None
    assert model_shape("b.py", _IMPORTED_CONFIG) is None
    assert model_shape("c.py", "def f(:\n") is None
    assert model_shape("d.py", "") is None
