"""A module's `save(dir)` reading the state dict of the model it holds and handing it to the model's own save
(`self.model.save_pretrained(dir, state_dict=sd)`) reads placeholders under ZeRO-3 at the read (ZG108), as a state dict
handed to `torch.save` does. A state dict only handed back to the caller is the caller's to judge."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
from torch import nn


class Reranker(nn.Module):
    def __init__(self, base_model{note}):
        super().__init__()
        self.model = base_model

    def forward(self, features):
        return self.model(**features).logits

    def save(self, output_dir):
        state_dict = self.model.state_dict()
        state_dict = type(state_dict)({{k: v.clone().cpu() for k, v in state_dict.items()}})
        {tail}
"""


def zg108_lines(tail: str, note: str = "") -> list[int]:
    found = check_source("m.py", textwrap.dedent(SOURCE.format(tail=tail, note=note)))
    return sorted(f.line for f in found if f.code == "ZG108")


def test_the_read_handed_to_the_models_save_is_reported_where_it_reads():
    assert zg108_lines("self.model.save_pretrained(output_dir, state_dict=state_dict)") == [14, 16]


def test_a_state_dict_only_handed_back_is_not_reported_at_the_read():
    assert zg108_lines("return state_dict") == []


def test_a_model_argument_annotated_none_is_still_read_by_its_name():
    # `base_model: None` is a placeholder annotation, not a type: the argument is judged by its name, as unannotated
    assert zg108_lines("self.model.save_pretrained(output_dir, state_dict=state_dict)", note=": None") == [14, 16]
