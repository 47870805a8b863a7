"""A layer run on an optional input of ids under its presence test that the method also runs on the same path on
another value (`if exists(cond_ids): c = self.token_emb(cond_ids)` ... `x = self.token_emb(x)`): ranks given the
ids run it, and gather it, once more (ZG205, `_called_again`; muse_maskgit's conditioning tokens, h-optin). Ids a
table looks up only when given (`token_type_ids`, `shape_ids`) are flagged as any optional input a layer runs on;
calls in exclusive branches stay clean."""

from __future__ import annotations

from tests.model.package_check import found, write_package

BLOCKS = """
from torch import nn


def exists(v):
    return v is not None


class Blocks(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.a = nn.Linear(d, d)
        self.b = nn.Linear(d, d)

    def forward(self, x, context=None):
        return self.b(self.a(x))
"""


def _check(tmp_path, body: str) -> list[tuple[str, int]]:
    path = write_package(tmp_path, {"model.py": BLOCKS + body}) / "model.py"
    return found(path, "ZG2")


def test_conditioning_ids_through_the_token_table_run_it_once_more(tmp_path):
    body = """

class Transformer(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.token_emb = nn.Embedding(n, d)
        self.blocks = Blocks(d)

    def forward(self, x, context, conditioning_token_ids=None):
        if exists(conditioning_token_ids):
            cond = self.token_emb(conditioning_token_ids)
            context = context + cond.mean(1, keepdim=True)
        x = self.token_emb(x)
        return self.blocks(x, context=context)
"""
    assert ("ZG205", 26) in _check(tmp_path, body)


def test_either_or_branches_stay_clean_and_ids_a_table_looks_up_only_when_given_are_flagged(tmp_path):
    # (`decoder_input_ids` or `input_ids`: `wte` runs either way; `token_type_ids` and `shape_ids` run their table
    # only when given, on the ids themselves: a rank called without them skips its gather)
    body = """

class GPT(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.wte = nn.Embedding(n, d)
        self.blocks = Blocks(d)

    def forward(self, input_ids, token_type_ids=None, decoder_input_ids=None):
        if decoder_input_ids is not None:
            h = self.wte(decoder_input_ids)
        else:
            h = self.wte(input_ids)
        if token_type_ids is not None:
            h = h + self.wte(token_type_ids)
        return self.blocks(h)


class Embeddings(nn.Module):
    def __init__(self, n, d, mapped):
        super().__init__()
        self.word = nn.Embedding(n, d)
        self.shape_embed = nn.Embedding(n, d)
        self.mapped = mapped

    def forward(self, input_ids, shape_ids=None):
        if not self.mapped:
            h = self.word(input_ids)
            if shape_ids is not None:
                h = h + self.shape_embed(shape_ids)
            return h
        else:
            return self.word(input_ids) + self.shape_embed(input_ids)
"""
    assert _check(tmp_path, body) == [("ZG205", 30), ("ZG205", 45)]
