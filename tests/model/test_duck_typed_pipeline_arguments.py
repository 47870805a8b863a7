"""A pipeline function handed an untyped object (`def dream(t5, ..., style_prompt=None)`) that the one plain class
of its package answering the methods called on it is an instance of, a class that keeps a model (`T5Embedder`
holding a T5 encoder), runs that model when it calls the object: doing so only for an optional prompt this call
was given is ZG205. An object of a class that keeps no model (a tokenizer of the package) is no finding."""

from __future__ import annotations

from package_check import found_in_package

T5 = """
import torch
from torch import nn


class T5Embedder:
    def __init__(self, d):
        self.model = nn.Sequential(nn.Embedding(32128, d), nn.Linear(d, d))

    def get_text_embeddings(self, texts):
        with torch.no_grad():
            return self.model(texts)


class Splitter:
    def __init__(self, sep):
        self.sep = sep

    def split_prompt(self, text):
        return text.split(self.sep)
"""

DREAM = """
import torch


def dream({obj}, prompt, style_prompt=None):
    embs = {obj}.{method}(prompt)
    if style_prompt is not None:
        style = {obj}.{method}(style_prompt)
        embs = embs + style
    return embs
"""


def test_an_optional_prompt_encoded_by_a_duck_typed_model_holder(tmp_path):
    files = {"t5.py": T5, "dream.py": DREAM.format(obj="t5", method="get_text_embeddings")}
    assert found_in_package(tmp_path, files, "dream.py", prefix="ZG2") == [("ZG205", 7)]


def test_an_optional_prompt_split_by_an_object_holding_no_model(tmp_path):
    files = {"t5.py": T5, "dream.py": DREAM.format(obj="splitter", method="split_prompt")}
    assert found_in_package(tmp_path, files, "dream.py", prefix="ZG2") == []
