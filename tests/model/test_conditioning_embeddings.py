"""Embeddings handed in as an optional conditioning input (`if exists(text_embeds): h = h + self.cond(...)`) are an
input a rank's batch may lack: the tower they feed runs on some ranks only (ZG205). Embeddings handed in *instead of*
what they are computed from (`if image_embeds is None: image_embeds = self.vision_model(pixel_values)`, as
`inputs_embeds` stands for `input_ids`) are the calling convention, every caller's choice alike."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

CONDITIONED = """
from torch import nn


def exists(v):
    return v is not None


class Unet(nn.Module):
    def __init__(self, dim, cond_dim):
        super().__init__()
        self.init = nn.Conv2d(3, dim, 3, padding=1)
        self.cond_proj = nn.Linear(cond_dim, dim)
        self.out = nn.Conv2d(dim, 3, 1)

    def forward(self, x, {name}=None):
        h = self.init(x)
        if {test}:
            h = h + self.cond_proj({name}.mean(1))[:, :, None, None]
        return self.out(h)
"""

FILLED = """
from torch import nn


class VisionText(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.vision_model = nn.Linear(32, dim)
        self.text = nn.Linear(dim, dim)

    def forward(self, pixel_values=None, {name}=None):
        if {name} is None:
            {name} = self.vision_model(pixel_values)
        return self.text({name})
"""


def zg205(source: str, **names: str) -> list[int]:
    found = check_source("m.py", textwrap.dedent(source.format(**names)))
    return [f.line for f in found if f.code == "ZG205"]


def test_conditioning_embeddings_tested_through_a_helper_gate_the_tower():
    assert zg205(CONDITIONED, name="text_embeds", test="exists(text_embeds)") == [18]
    assert zg205(CONDITIONED, name="cond_embeds", test="cond_embeds is not None") == [18]


def test_inputs_embeds_stay_the_calling_convention():
    assert zg205(CONDITIONED, name="inputs_embeds", test="inputs_embeds is not None") == []


def test_embeddings_computed_where_absent_are_an_alternative_input():
    assert zg205(FILLED, name="image_embeds") == []


def test_another_input_computed_where_absent_still_gates_the_encoder():
    # (not named as embeddings: a rank handed the features skips the encoder its peers run)
    assert zg205(FILLED, name="image_feats") == [12]


ALTERNATIVE = """
from torch import nn


class Encoder(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.embeddings = nn.Embedding(100, dim)
        self.encoder = nn.Linear(dim, dim)

    def forward(self, input_ids=None, encoder_embeds=None):
        if encoder_embeds is None:
            embedding_output = self.embeddings(input_ids)
        else:
            embedding_output = encoder_embeds
        return self.encoder(embedding_output)
"""


def test_embeddings_taken_instead_of_computed_ones_are_an_alternative_input():
    assert zg205(ALTERNATIVE) == []
