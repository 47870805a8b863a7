"""A module's `save(dir)` saving the tokenizer it keeps (`self.tokenizer.save_pretrained(dir)`) writes no weights: no
ZG108 there. The model it keeps, saved beside it (`self.model.save_pretrained(dir)`), is."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
from torch import nn


class Embedder(nn.Module):
    def __init__(self, base_model, {name}=None):
        super().__init__()
        self.model = base_model
        self.{name} = {name}

    def forward(self, features):
        return self.model(**features).last_hidden_state[:, 0]

    def save(self, output_dir):
        self.{name}.save_pretrained(output_dir)
        self.model.save_pretrained(output_dir)
"""


def zg108_lines(name: str) -> list[int]:
    found = check_source("m.py", textwrap.dedent(SOURCE.format(name=name)))
    return sorted(f.line for f in found if f.code == "ZG108")


def test_a_tokenizer_or_processor_saved_is_no_finding_the_model_is():
    assert zg108_lines("tokenizer") == [16]
    assert zg108_lines("processor") == [16]


def test_another_kept_object_saved_the_same_way_still_is():
    assert zg108_lines("teacher") == [15, 16]
